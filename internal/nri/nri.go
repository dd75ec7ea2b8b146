// Package nri is crib's side of the Node Resource Interface
// (github.com/containerd/nri): it embeds NRI's adaptation, which runs the
// pre-installed plugins and takes external ones on its socket, tells them of
// every pod and container event with the data NRI defines, and applies what
// they answer: adjustments to a container's OCI spec at creation, resource
// updates and evictions of other containers, and updates they ask for
// unasked. The sandbox and container managers call it through their
// Plugins interfaces; it calls them back for listings, updates and stops.
package nri

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	nri "github.com/containerd/nri/pkg/adaptation"
	validator "github.com/containerd/nri/plugins/default-validator/builtin"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/cdi"
	"github.com/crib-dev/crib/internal/config"
	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/resclass"
	"github.com/crib-dev/crib/internal/sandbox"
)

// Sandboxes is what NRI needs of the sandbox manager.
type Sandboxes interface {
	Get(id string) (sandbox.Sandbox, error)
	List() []sandbox.Sandbox
}

// Containers is what NRI needs of the container manager: listings, each
// container's OCI spec, and the update and stop paths plugins' requests
// take (neither of which calls the plugins again).
type Containers interface {
	List() []container.Container
	Get(id string) (container.Container, error)
	Spec(id string) (*specs.Spec, error)
	UpdateResourcesFromPlugin(ctx context.Context, id string, res *runtimeapi.LinuxContainerResources) error
	Stop(ctx context.Context, id string, timeout time.Duration) error
}

// Options are the NRI's collaborators beyond its configuration.
type Options struct {
	Version string
	Log     *slog.Logger
	CDI     *cdi.Registry
	// Classes resolves the block I/O and RDT classes plugins name; nil
	// has none, and a plugin naming one fails the creation saying so.
	Classes *resclass.Classes
	Metrics *Metrics
}

// NRI is one daemon's NRI adaptation.
type NRI struct {
	cfg   config.NRI
	opts  Options
	log   *slog.Logger
	r     *nri.Adaptation
	sbs   Sandboxes
	ctrs  Containers
	ready chan struct{}
	// later are the updates and evictions in flight that plugins answered
	// a notification with (see afterwards).
	later sync.WaitGroup

	mu sync.Mutex
	// stopped are the containers plugins have been told stopped, so that
	// each is told once, whether it was stopped or exited on its own, and
	// before it is removed.
	stopped map[string]bool
	// specs are the NRI view of each container's OCI spec (args, env,
	// mounts, hooks, linux), kept from its creation or read once from its
	// bundle, so that events do no I/O.
	specs map[string]*nri.Container
}

var (
	_ container.Plugins = (*NRI)(nil)
	_ sandbox.Plugins   = (*NRI)(nil)
)

// timeoutsOnce guards NRI's timeouts, which are process-wide and may be
// set only before the first adaptation starts.
var timeoutsOnce sync.Once

// New makes the adaptation without starting it; it returns nil, nil when
// NRI is disabled.
func New(cfg config.NRI, opts Options) (*NRI, error) {
	if !cfg.Enable {
		return nil, nil
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	timeoutsOnce.Do(func() {
		nri.SetPluginRegistrationTimeout(cfg.PluginRegistrationTimeout)
		nri.SetPluginRequestTimeout(cfg.PluginRequestTimeout)
	})
	n := &NRI{
		cfg: cfg, opts: opts, log: opts.Log.With("component", "nri"),
		ready:   make(chan struct{}),
		stopped: map[string]bool{},
		specs:   map[string]*nri.Container{},
	}
	ropts := []nri.Option{
		nri.WithPluginPath(cfg.PluginPath),
		nri.WithPluginConfigPath(cfg.PluginConfigPath),
		nri.WithSocketPath(cfg.SocketPath),
	}
	if cfg.DisableConnections {
		ropts = append(ropts, nri.WithDisabledExternalConnections())
	}
	if opts.Metrics != nil {
		ropts = append(ropts, nri.WithMetrics(opts.Metrics))
	}
	if v := cfg.DefaultValidator; v.Enable {
		ropts = append(ropts, nri.WithDefaultValidator(&validator.DefaultValidatorConfig{
			Enable:                                v.Enable,
			RejectOCIHookAdjustment:               v.RejectOCIHookAdjustment,
			RejectRuntimeDefaultSeccompAdjustment: v.RejectRuntimeDefaultSeccompAdjustment,
			RejectUnconfinedSeccompAdjustment:     v.RejectUnconfinedSeccompAdjustment,
			RejectCustomSeccompAdjustment:         v.RejectCustomSeccompAdjustment,
			RejectNamespaceAdjustment:             v.RejectNamespaceAdjustment,
			RejectSysctlAdjustment:                v.RejectSysctlAdjustment,
			RequiredPlugins:                       v.RequiredPlugins,
			TolerateMissingAnnotation:             v.TolerateMissingPluginsAnnotation,
		}))
	}
	r, err := nri.New("crib", opts.Version, n.sync, n.updateUnasked, ropts...)
	if err != nil {
		return nil, fmt.Errorf("nri: %w", err)
	}
	n.r = r
	return n, nil
}

// Start starts the pre-installed plugins, synchronised with what runs, and
// listens for external ones. It is called once the managers have restored
// what the daemon had.
func (n *NRI) Start(sbs Sandboxes, ctrs Containers) error {
	n.sbs, n.ctrs = sbs, ctrs
	close(n.ready)
	if err := n.r.Start(); err != nil {
		return fmt.Errorf("nri: start: %w", err)
	}
	n.log.Info("NRI started", "socket", n.cfg.SocketPath, "plugin_path", n.cfg.PluginPath)
	return nil
}

// Stop stops the plugins and the listener.
func (n *NRI) Stop() {
	n.r.Stop()
	n.later.Wait()
}

// afterwards applies evictions and updates of containers that plugins
// answered an event of c with, once the caller is done: the caller holds
// c's op lock (a Stop, an update, a failed start), and the updates and
// evictions take the lock of the container they name, which may be c, or
// a container whose own stop or update waits for c's lock.
func (n *NRI) afterwards(evictions []*nri.ContainerEviction, updates []*nri.ContainerUpdate) {
	if len(evictions)+len(updates) == 0 {
		return
	}
	n.later.Add(1)
	go func() {
		defer n.later.Done()
		ctx := context.Background()
		n.evict(ctx, evictions)
		n.apply(ctx, updates)
	}()
}

// BlockSync implements container.Plugins.
func (n *NRI) BlockSync() func() {
	b := n.r.BlockPluginSync()
	return b.Unblock
}

// RunPodSandbox implements sandbox.Plugins.
func (n *NRI) RunPodSandbox(ctx context.Context, s sandbox.Sandbox) error {
	err := n.r.RunPodSandbox(ctx, &nri.RunPodSandboxRequest{Pod: podOf(s)})
	if err != nil {
		return n.refused(s.ID, "", "RunPodSandbox", err)
	}
	return nil
}

// StopPodSandbox implements sandbox.Plugins.
func (n *NRI) StopPodSandbox(ctx context.Context, s sandbox.Sandbox) {
	if err := n.r.StopPodSandbox(ctx, &nri.StopPodSandboxRequest{Pod: podOf(s)}); err != nil {
		n.log.Warn("StopPodSandbox", "sandbox", s.ID, "err", err)
	}
}

// RemovePodSandbox implements sandbox.Plugins.
func (n *NRI) RemovePodSandbox(ctx context.Context, s sandbox.Sandbox) {
	if err := n.r.RemovePodSandbox(ctx, &nri.RemovePodSandboxRequest{Pod: podOf(s)}); err != nil {
		n.log.Warn("RemovePodSandbox", "sandbox", s.ID, "err", err)
	}
}

// UpdatePodSandbox implements sandbox.Plugins.
func (n *NRI) UpdatePodSandbox(ctx context.Context, s sandbox.Sandbox, overhead, res *runtimeapi.LinuxContainerResources) error {
	_, err := n.r.UpdatePodSandbox(ctx, &nri.UpdatePodSandboxRequest{
		Pod:                    podOf(s),
		OverheadLinuxResources: resourcesFromCRI(overhead),
		LinuxResources:         resourcesFromCRI(res),
	})
	if err != nil {
		return n.refused(s.ID, "", "UpdatePodSandbox", err)
	}
	return nil
}

// PostUpdatePodSandbox implements sandbox.Plugins.
func (n *NRI) PostUpdatePodSandbox(ctx context.Context, s sandbox.Sandbox) {
	if err := n.r.PostUpdatePodSandbox(ctx, &nri.PostUpdatePodSandboxRequest{Pod: podOf(s)}); err != nil {
		n.log.Warn("PostUpdatePodSandbox", "sandbox", s.ID, "err", err)
	}
}

// CreateContainer implements container.Plugins: it tells the plugins of
// the container, applies their adjustment to spec, then the updates and
// evictions of other containers they asked for.
func (n *NRI) CreateContainer(ctx context.Context, sb sandbox.Sandbox, c container.Container, spec *specs.Spec) error {
	ctr := containerOf(c, spec)
	rpl, err := n.r.CreateContainer(ctx, &nri.CreateContainerRequest{Pod: podOf(sb), Container: ctr})
	if err != nil {
		return n.refused(sb.ID, c.ID, "CreateContainer", err)
	}
	if err := n.adjust(spec, rpl.GetAdjust()); err != nil {
		n.opts.Metrics.Refused("CreateContainer")
		err = fmt.Errorf("nri: apply the plugins' adjustment of container %s: %w", c.ID, err)
		n.warn(sb.ID, c.ID, "NRIAdjustmentFailed", err)
		return fmt.Errorf("%w: %w", err, errdefs.ErrInvalidArgument)
	}
	n.keep(c.ID, containerOf(c, spec))
	n.evict(ctx, rpl.GetEvict())
	n.apply(ctx, rpl.GetUpdate())
	return nil
}

// PostCreateContainer implements container.Plugins.
func (n *NRI) PostCreateContainer(ctx context.Context, c container.Container) {
	pod, ctr := n.describe(c)
	if err := n.r.PostCreateContainer(ctx, &nri.PostCreateContainerRequest{Pod: pod, Container: ctr}); err != nil {
		n.log.Warn("PostCreateContainer", "container", c.ID, "err", err)
	}
}

// StartContainer implements container.Plugins.
func (n *NRI) StartContainer(ctx context.Context, c container.Container) error {
	pod, ctr := n.describe(c)
	if err := n.r.StartContainer(ctx, &nri.StartContainerRequest{Pod: pod, Container: ctr}); err != nil {
		return n.refused(c.SandboxID, c.ID, "StartContainer", err)
	}
	return nil
}

// PostStartContainer implements container.Plugins.
func (n *NRI) PostStartContainer(ctx context.Context, c container.Container) {
	pod, ctr := n.describe(c)
	if err := n.r.PostStartContainer(ctx, &nri.PostStartContainerRequest{Pod: pod, Container: ctr}); err != nil {
		n.log.Warn("PostStartContainer", "container", c.ID, "err", err)
	}
}

// UpdateContainer implements container.Plugins.
func (n *NRI) UpdateContainer(ctx context.Context, c container.Container, res *runtimeapi.LinuxContainerResources) (*runtimeapi.LinuxContainerResources, error) {
	pod, ctr := n.describe(c)
	rpl, err := n.r.UpdateContainer(ctx, &nri.UpdateContainerRequest{Pod: pod, Container: ctr, LinuxResources: resourcesFromCRI(res)})
	if err != nil {
		return nil, n.refused(c.SandboxID, c.ID, "UpdateContainer", err)
	}
	out := res
	var others []*nri.ContainerUpdate
	for _, u := range rpl.GetUpdate() {
		if u.GetContainerId() == c.ID {
			out = mergeResources(res, u.GetLinux().GetResources())
			continue
		}
		others = append(others, u)
	}
	n.afterwards(rpl.GetEvict(), others)
	return out, nil
}

// PostUpdateContainer implements container.Plugins.
func (n *NRI) PostUpdateContainer(ctx context.Context, c container.Container) {
	pod, ctr := n.describe(c)
	if err := n.r.PostUpdateContainer(ctx, &nri.PostUpdateContainerRequest{Pod: pod, Container: ctr}); err != nil {
		n.log.Warn("PostUpdateContainer", "container", c.ID, "err", err)
	}
}

// StopContainer implements container.Plugins; a container is told stopped
// once.
func (n *NRI) StopContainer(ctx context.Context, c container.Container) {
	if !n.markStopped(c.ID) {
		return
	}
	pod, ctr := n.describe(c)
	rpl, err := n.r.StopContainer(ctx, &nri.StopContainerRequest{Pod: pod, Container: ctr})
	if err != nil {
		n.log.Warn("StopContainer", "container", c.ID, "err", err)
		return
	}
	n.afterwards(nil, rpl.GetUpdate())
}

// RemoveContainer implements container.Plugins; a container not yet told
// stopped is told so first, as containerd does.
func (n *NRI) RemoveContainer(ctx context.Context, c container.Container) {
	n.StopContainer(ctx, c)
	pod, ctr := n.describe(c)
	if err := n.r.RemoveContainer(ctx, &nri.RemoveContainerRequest{Pod: pod, Container: ctr}); err != nil {
		n.log.Warn("RemoveContainer", "container", c.ID, "err", err)
	}
	n.forget(c.ID)
}

// forget drops what is kept of the container id.
func (n *NRI) forget(id string) {
	n.mu.Lock()
	delete(n.stopped, id)
	delete(n.specs, id)
	n.mu.Unlock()
}

func (n *NRI) markStopped(id string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped[id] {
		return false
	}
	n.stopped[id] = true
	return true
}

// keep records the NRI view of a container's spec.
func (n *NRI) keep(id string, ctr *nri.Container) {
	n.mu.Lock()
	n.specs[id] = ctr
	n.mu.Unlock()
}

// describe is the pod and container of an event: the container's spec as
// kept, its state as c has it now.
func (n *NRI) describe(c container.Container) (*nri.PodSandbox, *nri.Container) {
	pod := &nri.PodSandbox{Id: c.SandboxID}
	if n.sbs != nil {
		if sb, err := n.sbs.Get(c.SandboxID); err == nil {
			pod = podOf(sb)
		}
	}
	n.mu.Lock()
	kept := n.specs[c.ID]
	n.mu.Unlock()
	if kept == nil {
		var spec *specs.Spec
		if n.ctrs != nil {
			// After a restart: read once from the bundle.
			spec, _ = n.ctrs.Spec(c.ID)
		}
		kept = containerOf(c, spec)
		n.keep(c.ID, kept)
		if n.ctrs != nil {
			if _, err := n.ctrs.Get(c.ID); errdefs.IsNotFound(err) {
				// Removed meanwhile (a plugin's sync lists the
				// containers as they go): its RemoveContainer may
				// have come before the keep. Checked after it, so
				// that one of the two drops it.
				n.forget(c.ID)
			}
		}
	}
	return pod, withState(kept, c)
}

// refused is err, a plugin's refusal or failure of op, as the operation's
// error: the CRI caller (the agent: the container's waiting message) shows
// it.
func (n *NRI) refused(sandboxID, containerID, op string, err error) error {
	n.opts.Metrics.Refused(op)
	err = fmt.Errorf("nri: %s refused by plugin: %w", op, err)
	n.warn(sandboxID, containerID, "NRIRefused", err)
	if errdefs.IsDeadlineExceeded(err) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w", err, errdefs.ErrFailedPrecondition)
}

func (n *NRI) warn(sandboxID, containerID, reason string, err error) {
	n.log.Warn(err.Error(), "sandbox", sandboxID, "container", containerID, "reason", reason)
}
