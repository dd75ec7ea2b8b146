package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"github.com/containernetworking/cni/libcni"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/fsnotify/fsnotify"
)

// ifName is the pod's interface.
const ifName = "eth0"

// Config is the Manager's configuration.
type Config struct {
	// ConfDir holds CNI network configurations; the first .conflist (or
	// .conf/.json) file by name is used.
	ConfDir string
	// PluginDirs are searched for plugin binaries.
	PluginDirs []string
	// CacheDir is libcni's cache of attachments (results and the config
	// each was made with).
	CacheDir string
	// Defaults is what crib writes when ConfDir has no configuration.
	Defaults Defaults
	// Observer, when set, is told how long each ADD and DEL took.
	Observer Observer
}

// Observer records CNI operations, e.g. as metrics; op is "add" or
// "del", err nil when the operation succeeded. It must not block.
type Observer interface {
	ObserveCNI(op string, d time.Duration, err error)
}

// PortMapping publishes a pod port on the host (portmap plugin).
type PortMapping struct {
	HostPort      int32  `json:"hostPort"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP,omitempty"`
}

// Bandwidth limits a pod's traffic (bandwidth plugin), in bits per second.
type Bandwidth struct {
	IngressRate  uint64 `json:"ingressRate,omitempty"`
	IngressBurst uint64 `json:"ingressBurst,omitempty"`
	EgressRate   uint64 `json:"egressRate,omitempty"`
	EgressBurst  uint64 `json:"egressBurst,omitempty"`
}

// Pod identifies one pod's attachment.
type Pod struct {
	// ID is the sandbox id, the CNI container id.
	ID string
	// NetNS is the path of the pod's network namespace.
	NetNS                string
	Name, Namespace, UID string
	PortMappings         []PortMapping
	Bandwidth            *Bandwidth
}

// Manager attaches pods to the configured network.
type Manager struct {
	cfg Config
	log *slog.Logger
	cni *libcni.CNIConfig

	mu      sync.RWMutex
	list    *libcni.NetworkConfigList
	loadErr error

	watcher *fsnotify.Watcher
}

// New returns a Manager; it reads nothing until Start.
func New(cfg Config, log *slog.Logger) *Manager {
	return &Manager{
		cfg: cfg,
		log: log,
		cni: libcni.NewCNIConfigWithCacheDir(cfg.PluginDirs, cfg.CacheDir, nil),
	}
}

// Start writes the default configuration into an empty conf dir, loads
// the configuration and watches the dir until ctx ends.
func (m *Manager) Start(ctx context.Context) error {
	files, err := confFiles(m.cfg.ConfDir)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		if err := writeDefault(m.cfg.ConfDir, m.cfg.Defaults); err != nil {
			return err
		}
		m.log.Info("wrote the default CNI network", "file", filepath.Join(m.cfg.ConfDir, DefaultConfName),
			"subnet", m.cfg.Defaults.Subnet, "bridge", m.cfg.Defaults.Bridge)
	}
	m.reload()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch CNI conf dir: %w", err)
	}
	if err := w.Add(m.cfg.ConfDir); err != nil {
		w.Close()
		return fmt.Errorf("watch CNI conf dir %s: %w", m.cfg.ConfDir, err)
	}
	m.watcher = w
	go m.watch(ctx)
	return nil
}

func (m *Manager) watch(ctx context.Context) {
	defer m.watcher.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-m.watcher.Events:
			if !ok {
				return
			}
			m.reload()
		case err, ok := <-m.watcher.Errors:
			if !ok {
				return
			}
			m.log.Warn("watch CNI conf dir", "err", err)
		}
	}
}

// Reload reads the conf dir again, as a change in it does (crib's
// configuration reload asks for it, in case a change went unseen).
func (m *Manager) Reload() { m.reload() }

// reload loads the first configuration of the conf dir.
func (m *Manager) reload() {
	list, err := m.load()
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := (list == nil) != (m.list == nil) || (list != nil && string(list.Bytes) != string(m.list.Bytes))
	m.list, m.loadErr = list, err
	if err != nil {
		m.log.Warn("no usable CNI network configuration", "dir", m.cfg.ConfDir, "err", err)
	} else if changed {
		m.log.Info("CNI network configuration loaded", "network", list.Name)
	}
}

func (m *Manager) load() (*libcni.NetworkConfigList, error) {
	files, err := confFiles(m.cfg.ConfDir)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no network configuration in %s", m.cfg.ConfDir)
	}
	f := files[0]
	if strings.HasSuffix(f, ".conflist") {
		list, err := libcni.ConfListFromFile(f)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", f, err)
		}
		return list, nil
	}
	conf, err := libcni.ConfFromFile(f)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", f, err)
	}
	list, err := libcni.ConfListFromConf(conf)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", f, err)
	}
	return list, nil
}

// confFiles lists the configuration files of dir in the order CNI
// runtimes use them.
func confFiles(dir string) ([]string, error) {
	files, err := libcni.ConfFiles(dir, []string{".conflist", ".conf", ".json"})
	if err != nil {
		return nil, fmt.Errorf("read CNI conf dir %s: %w", dir, err)
	}
	sort.Strings(files)
	return files, nil
}

// Ready reports whether pods can be networked, and why not.
func (m *Manager) Ready() (bool, string) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.list == nil {
		return false, m.notReady()
	}
	return true, ""
}

// current is the configuration new pods are attached with.
func (m *Manager) current() (*libcni.NetworkConfigList, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.list == nil {
		return nil, fmt.Errorf("pod network is not ready: %s: %w", m.notReady(), errdefs.ErrFailedPrecondition)
	}
	return m.list, nil
}

// notReady says why there is no configuration; the caller holds m.mu.
func (m *Manager) notReady() string {
	if m.loadErr != nil {
		return m.loadErr.Error()
	}
	return "no CNI configuration"
}

func runtimeConf(p Pod) *libcni.RuntimeConf {
	rc := &libcni.RuntimeConf{
		ContainerID: p.ID,
		NetNS:       p.NetNS,
		IfName:      ifName,
		Args: [][2]string{
			{"IgnoreUnknown", "1"},
			{"K8S_POD_NAMESPACE", p.Namespace},
			{"K8S_POD_NAME", p.Name},
			{"K8S_POD_INFRA_CONTAINER_ID", p.ID},
			{"K8S_POD_UID", p.UID},
		},
		CapabilityArgs: map[string]any{},
	}
	if len(p.PortMappings) > 0 {
		rc.CapabilityArgs["portMappings"] = p.PortMappings
	}
	if p.Bandwidth != nil {
		rc.CapabilityArgs["bandwidth"] = p.Bandwidth
	}
	return rc
}

// Setup attaches the pod and returns its IPs, the first one primary.
func (m *Manager) Setup(ctx context.Context, p Pod) ([]net.IP, error) {
	list, err := m.current()
	if err != nil {
		return nil, err
	}
	began := time.Now()
	res, err := m.cni.AddNetworkList(ctx, list, runtimeConf(p))
	m.log.Debug("CNI add", "sandbox", p.ID, "network", list.Name, "duration", time.Since(began))
	m.observe("add", began, err)
	if err != nil {
		return nil, fmt.Errorf("set up pod network %s: %w", list.Name, err)
	}
	r, err := types100.NewResultFromResult(res)
	if err != nil {
		return nil, fmt.Errorf("set up pod network %s: read result: %w", list.Name, err)
	}
	var ips []net.IP
	for _, ip := range r.IPs {
		// Addresses on the pod's interface, not the host's side.
		if ip.Interface != nil && *ip.Interface < len(r.Interfaces) && r.Interfaces[*ip.Interface].Sandbox == "" {
			continue
		}
		ips = append(ips, ip.Address.IP)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("set up pod network %s: the plugins gave the pod no IP", list.Name)
	}
	return ips, nil
}

// teardownTimeout bounds a pod's CNI DEL, which its caller cannot cut
// short; it is the kubelet's default runtime request timeout.
const teardownTimeout = 2 * time.Minute

// Teardown detaches the pod with the configuration it was attached with,
// or the current one when none was recorded. Detaching a pod that is not
// attached is not an error.
func (m *Manager) Teardown(ctx context.Context, p Pod) error {
	list := m.attachedWith(p)
	if list == nil {
		// No attachment was recorded and there is no configuration the
		// pod could have been attached with.
		return nil
	}
	// The DEL runs to its end whatever becomes of the caller's context: a
	// kubelet that gave up on StopPodSandbox must not have the plugins
	// killed half-way, since a plugin cannot always find again what it
	// had left to undo (the bridge plugin finds the masquerade rules it
	// removes through the addresses of the link it deleted first, so a
	// DEL cut between the two leaves the rules for good).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout)
	defer cancel()
	began := time.Now()
	err := m.cni.DelNetworkList(ctx, list, runtimeConf(p))
	m.observe("del", began, err)
	if err != nil {
		return fmt.Errorf("tear down pod network %s: %w", list.Name, err)
	}
	return nil
}

// observe tells the observer, if any, of an operation begun at began.
func (m *Manager) observe(op string, began time.Time, err error) {
	if m.cfg.Observer != nil {
		m.cfg.Observer.ObserveCNI(op, time.Since(began), err)
	}
}

// attachedWith is the configuration of the pod's attachment from libcni's
// cache, else the current configuration, else nil.
func (m *Manager) attachedWith(p Pod) *libcni.NetworkConfigList {
	attachments, err := m.cni.GetCachedAttachments(p.ID)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		m.log.Debug("read CNI cache", "sandbox", p.ID, "err", err)
	}
	for _, a := range attachments {
		if list, err := libcni.ConfListFromBytes(a.Config); err == nil {
			return list
		}
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.list
}

// SetPodCIDR makes cidr the subnet of the default network for the pods
// that come next, when the network in use is the default one crib wrote;
// an operator's own configuration is left alone.
func (m *Manager) SetPodCIDR(cidr string) error {
	if cidr == "" {
		return nil
	}
	if _, _, err := net.ParseCIDR(cidr); err != nil {
		return fmt.Errorf("pod CIDR %q: %w", cidr, errdefs.ErrInvalidArgument)
	}
	files, err := confFiles(m.cfg.ConfDir)
	if err != nil {
		return err
	}
	if len(files) == 0 || filepath.Base(files[0]) != DefaultConfName {
		m.log.Info("pod CIDR not applied: the CNI network is not crib's default", "cidr", cidr)
		return nil
	}
	m.mu.Lock()
	m.cfg.Defaults.Subnet = cidr
	d := m.cfg.Defaults
	m.mu.Unlock()
	if err := writeDefault(m.cfg.ConfDir, d); err != nil {
		return err
	}
	m.reload()
	m.log.Info("default CNI network uses the pod CIDR", "cidr", cidr)
	return nil
}
