package sandbox

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/cgroupfs"
	"github.com/crib-dev/crib/internal/ids"
	"github.com/crib-dev/crib/internal/lifecycle"
	"github.com/crib-dev/crib/internal/metastore"
	"github.com/crib-dev/crib/internal/namereserve"
	"github.com/crib-dev/crib/internal/netns"
	"github.com/crib-dev/crib/internal/network"
	"github.com/crib-dev/crib/internal/systemd"
)

const (
	recordKind    = "sandboxes"
	recordVersion = 1
)

// Sandbox is one pod sandbox. Values handed out by the Manager are copies;
// Config must not be modified.
type Sandbox struct {
	ID             string
	Config         *runtimeapi.PodSandboxConfig
	RuntimeHandler string
	State          State
	CreatedAt      time.Time
	// Dir holds the pod's files (hostname, resolv.conf, hosts, shm) and
	// pinned namespaces; it lives under the state root.
	Dir string
	// NetNS, IPCNS and UTSNS are pinned namespace paths; empty when the pod
	// uses the host's namespace.
	NetNS, IPCNS, UTSNS string
	// UserNS is the pod's pinned user namespace, which owns the others;
	// empty when the pod runs with the host's users.
	UserNS string
	// ShmPath is mounted at the containers' /dev/shm.
	ShmPath string
	// PausePid and PauseStart identify the init of a shared PID namespace;
	// zero when the pod does not share one.
	PausePid   int
	PauseStart uint64
	// IPs are the pod's addresses, the primary first; NetworkAttached is
	// set while the pod is attached to the CNI network.
	IPs             []string
	NetworkAttached bool
	// CgroupParent is the pod's cgroup, under which containers get theirs.
	CgroupParent string
	// OwnCgroup is set when crib chose CgroupParent and must remove it.
	OwnCgroup bool
	// Limits are those crib last set on the pod cgroup it made (resize),
	// nil while it set none.
	Limits *cgroupfs.Limits
}

// PIDNS returns the path of the pod's shared PID namespace, or "".
func (s Sandbox) PIDNS() string {
	if s.PausePid == 0 {
		return ""
	}
	return fmt.Sprintf("/proc/%d/ns/pid", s.PausePid)
}

// HostnamePath, ResolvPath and HostsPath are the pod's files that
// containers bind-mount.
func (s Sandbox) HostnamePath() string { return filepath.Join(s.Dir, "hostname") }

// ResolvPath is the pod's resolv.conf.
func (s Sandbox) ResolvPath() string { return filepath.Join(s.Dir, "resolv.conf") }

// HostsPath is the pod's hosts file.
func (s Sandbox) HostsPath() string { return filepath.Join(s.Dir, "hosts") }

// record is the on-disk form of a Sandbox.
type record struct {
	Sandbox
	Config []byte // protobuf of PodSandboxConfig
}

// Config is the Manager's configuration.
type Config struct {
	// StateDir holds one directory per sandbox.
	StateDir string
	// PauseBinary is run as `PauseBinary pause ID`: crib-monitor, or crib.
	PauseBinary string
	// ShmSize is the size of each pod's /dev/shm in bytes.
	ShmSize int64
	// CgroupDriver is "cgroupfs" or "systemd".
	CgroupDriver string
	// CgroupParent is where pods go when the kubelet names no cgroup parent.
	CgroupParent string
	// Systemd makes and stops the pod slices crib chooses under the systemd
	// driver (and stops those of an earlier run on it); nil where systemd
	// does not run.
	Systemd *systemd.Client
	// Events, when set, is told of every sandbox made ready (created and
	// started), stopped and removed; nil publishes nothing.
	Events lifecycle.Publisher
	// Tracer, when set, is told of the phases of each pod's start.
	Tracer Tracer
	// NetNSSpares, when set, holds network namespaces made ahead of need,
	// which pods on a CNI network take instead of making their own.
	NetNSSpares *netns.Spares
	// NSHold, when set, keeps the pods' namespaces as descriptors, so
	// that a pin is a symlink rather than a mount in the host's table;
	// nil pins them with bind mounts.
	NSHold netns.Holder
	// UserNamespaces says whether pods of a runtime handler can have user
	// namespaces of their own: nil if so, else an error saying what is
	// missing. Unset means never.
	UserNamespaces func(handler string) error
	// Plugins are told of each pod's lifecycle (NRI); nil is none.
	Plugins Plugins
}

// Network is what the Manager needs of pod networking.
type Network interface {
	Setup(ctx context.Context, p network.Pod) ([]net.IP, error)
	Teardown(ctx context.Context, p network.Pod) error
}

// Manager runs the pod sandboxes of one daemon.
type Manager struct {
	cfg     Config
	db      *metastore.DB
	log     *slog.Logger
	names   *namereserve.Names
	network Network

	mu   sync.RWMutex
	byID map[string]*Sandbox
	// locks serialise Stop and Remove of one sandbox; Remove deletes
	// the sandbox's.
	locks sync.Map
}

// New returns a Manager; it does no I/O until Restore.
func New(cfg Config, db *metastore.DB, net Network, log *slog.Logger) *Manager {
	if cfg.Tracer == nil {
		cfg.Tracer = noTracer{}
	}
	return &Manager{cfg: cfg, db: db, log: log, network: net, names: namereserve.New(), byID: map[string]*Sandbox{}}
}

// nameKey is the CRI identity of a sandbox: a second sandbox with the same
// name, namespace, uid and attempt is refused.
func nameKey(md *runtimeapi.PodSandboxMetadata) string {
	return fmt.Sprintf("%s_%s_%s_%d", md.GetName(), md.GetNamespace(), md.GetUid(), md.GetAttempt())
}

func (m *Manager) lock(id string) func() {
	v, _ := m.locks.LoadOrStore(id, &sync.Mutex{})
	mu := v.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// publish tells cfg.Events of a transition of sandbox id; it never blocks.
// A sandbox's events name it as both the subject and the pod.
func (m *Manager) publish(kind lifecycle.Kind, id string) {
	if m.cfg.Events == nil {
		return
	}
	m.cfg.Events.Publish(lifecycle.Event{Kind: kind, ID: id, SandboxID: id, At: time.Now()})
}

func (m *Manager) save(s *Sandbox) error {
	cfg, err := proto.Marshal(s.Config)
	if err != nil {
		return fmt.Errorf("encode sandbox %s config: %w", s.ID, err)
	}
	return m.db.Put(recordKind, s.ID, recordVersion, record{Sandbox: *s, Config: cfg})
}

// Restore loads the sandboxes recorded on disk, rolls back creations the
// daemon died in, marks pods whose shared-PID init died as not ready, and
// has the namespace holder drop what it holds for no recorded sandbox.
func (m *Manager) Restore(ctx context.Context) error {
	var loaded []*Sandbox
	err := m.db.ForEach(recordKind, []int{recordVersion}, func(id string, decode func(any) error) error {
		var r record
		if err := decode(&r); err != nil {
			m.log.Error("skip unreadable sandbox record", "sandbox", id, "err", err)
			return nil
		}
		s := r.Sandbox
		s.Config = &runtimeapi.PodSandboxConfig{}
		if err := proto.Unmarshal(r.Config, s.Config); err != nil {
			m.log.Error("skip unreadable sandbox record", "sandbox", id, "err", err)
			return nil
		}
		loaded = append(loaded, &s)
		return nil
	})
	if err != nil {
		return fmt.Errorf("restore sandboxes: %w", err)
	}
	for _, s := range loaded {
		if s.State == Creating {
			m.log.Info("roll back sandbox creation interrupted by a restart", "sandbox", s.ID)
			// The killed daemon's CNI plugins may still be adding the pod.
			waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			network.WaitOrphans(waitCtx, s.ID)
			cancel()
			if err := m.teardown(ctx, s); err != nil {
				// The record stays, so that the next start tries again
				// rather than forget what is left.
				m.log.Error("roll back sandbox", "sandbox", s.ID, "err", err)
				continue
			}
			if err := m.db.Delete(recordKind, s.ID); err != nil {
				return err
			}
			continue
		}
		if s.State == Ready && s.PausePid != 0 && !pauseAlive(s) {
			m.log.Info("pod init gone after restart; sandbox not ready", "sandbox", s.ID)
			s.State = NotReady
			if err := m.save(s); err != nil {
				return err
			}
		}
		m.byID[s.ID] = s
		m.names.Hold(nameKey(s.Config.GetMetadata()), s.ID)
	}
	// Pins whose holder ended are mended by Rehold, once the containers
	// are restored too.
	if err := m.dropUnknownHeld(); err != nil {
		m.log.Warn("drop namespaces held for unrecorded sandboxes", "err", err)
	}
	return nil
}

// Get returns the sandbox with id, or a unique id prefix.
func (m *Manager) Get(id string) (Sandbox, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s, err := m.find(id)
	if err != nil {
		return Sandbox{}, err
	}
	return *s, nil
}

func (m *Manager) find(id string) (*Sandbox, error) {
	return ids.Find(m.byID, id, "sandbox")
}

// List returns every sandbox, oldest first.
func (m *Manager) List() []Sandbox {
	m.mu.RLock()
	out := make([]Sandbox, 0, len(m.byID))
	for _, s := range m.byID {
		out = append(out, *s)
	}
	m.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out
}
