package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/containerd/cgroups/v3"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/api"
	"github.com/crib-dev/crib/internal/config"
	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/cri"
	"github.com/crib-dev/crib/internal/events"
	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/monitor"
	"github.com/crib-dev/crib/internal/network"
	"github.com/crib-dev/crib/internal/ociruntime"
	"github.com/crib-dev/crib/internal/ocispec"
	"github.com/crib-dev/crib/internal/sandbox"
	"github.com/crib-dev/crib/internal/state"
	"github.com/crib-dev/crib/internal/stats"
	"github.com/crib-dev/crib/internal/streaming"
	"github.com/crib-dev/crib/internal/systemd"
	"github.com/crib-dev/crib/internal/usage"
)

// Version is crib's version, set at build time.
var Version = "0.1.0-dev"

// Daemon is one running crib runtime.
type Daemon struct {
	cfg  config.Config
	log  *slog.Logger
	self string

	db      *state.DB
	images  *image.Store
	server  *cri.Server
	streams *streaming.Server
	grpc    *grpc.Server
	// events carries the managers' lifecycle events to the CRI's
	// GetContainerEvents streams.
	events *events.Broadcaster[events.Event]
	ready  chan struct{}
}

// New returns a daemon for cfg; self is the path of the crib binary, run
// again as `crib monitor` and `crib pause`. It does no I/O.
func New(cfg config.Config, self string, log *slog.Logger) *Daemon {
	return &Daemon{cfg: cfg, self: self, log: log, ready: make(chan struct{})}
}

// Ready is closed once the daemon accepts calls on its socket.
func (d *Daemon) Ready() <-chan struct{} { return d.ready }

// Run starts the daemon and serves until ctx is done, then shuts down.
func (d *Daemon) Run(ctx context.Context) error {
	if err := d.cfg.Validate(); err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	runtimes, handlers, err := d.runtimes(ctx)
	if err != nil {
		return err
	}
	if err := d.prepareRoots(); err != nil {
		return err
	}
	d.db, err = state.Open(filepath.Join(d.cfg.Root, "metadata.db"))
	if err != nil {
		return err
	}
	defer d.db.Close()

	images, err := image.Open(ctx, image.Config{
		Root:                filepath.Join(d.cfg.Root, "images"),
		Registries:          registries(d.cfg.Registries),
		MaxLayerSize:        d.cfg.MaxLayerSize,
		PullProgressTimeout: d.cfg.ImagePullProgressTimeout,
	})
	if err != nil {
		return err
	}
	defer images.Close()
	d.images = images
	for _, ref := range d.cfg.PinnedImages {
		if err := images.SetPinned(ref, true); err != nil {
			d.log.Warn("pinned image is not in the store", "image", ref, "err", err)
		}
	}
	hostCaps, err := ocispec.ReadHostCaps()
	if err != nil {
		return err
	}
	netctx, stopNetwork := context.WithCancel(ctx)
	defer stopNetwork()
	pods := network.New(network.Config{
		ConfDir:    d.cfg.Network.ConfDir,
		PluginDirs: d.cfg.Network.PluginDirs,
		CacheDir:   filepath.Join(d.cfg.Root, "cni", "cache"),
		Defaults: network.Defaults{
			Name:        d.cfg.Network.Name,
			Bridge:      d.cfg.Network.Bridge,
			Subnet:      d.cfg.Network.Subnet,
			IPAMDataDir: filepath.Join(d.cfg.Root, "cni", "networks"),
		},
	}, d.log)
	if err := pods.Start(netctx); err != nil {
		return err
	}
	// Nobody subscribes before the socket is served, so what Restore
	// publishes goes nowhere: a new subscriber relists instead.
	d.events = events.NewBroadcaster[events.Event](events.DefaultBuffer)
	defer d.events.Close()
	// The client connects on first use: under cgroupfs, only to stop the
	// slices of pods made before a switch from the systemd driver.
	var sd *systemd.Client
	if systemd.Booted() {
		sd = systemd.New()
		defer sd.Close()
	} else if d.cfg.CgroupDriver == "systemd" {
		return fmt.Errorf("cgroup_driver is systemd, but systemd is not running on this host")
	}
	sandboxes := sandbox.New(sandbox.Config{
		StateDir:     filepath.Join(d.cfg.State, "sandboxes"),
		Self:         d.self,
		ShmSize:      d.cfg.ShmSize,
		CgroupDriver: d.cfg.CgroupDriver,
		CgroupParent: d.cfg.CgroupParent,
		Systemd:      sd,
		Events:       d.events,
	}, d.db, pods, d.log)
	// One monitor waits ahead of need: a container start then waits for
	// no process start-up but the OCI runtime's.
	monitors := monitor.NewPool(d.self, 1)
	defer monitors.Close()
	containers := container.New(container.Config{
		BundleDir:         filepath.Join(d.cfg.Root, "containers"),
		StateDir:          filepath.Join(d.cfg.State, "containers"),
		Monitors:          monitors,
		RecursiveReadOnly: rroHandlers(handlers),
		Runtimes:          runtimes,
		CgroupDriver:      d.cfg.CgroupDriver,
		CgroupV2:          cgroups.Mode() == cgroups.Unified,
		OOMScoreAdjMin:    oomScoreAdjMin(),
		HostCaps:          hostCaps,
		Hugetlb:           hasController("hugetlb"),
		Events:            d.events,
	}, d.db, images, sandboxes, d.log)
	if err := sandboxes.Restore(ctx); err != nil {
		return err
	}
	if err := containers.Restore(ctx); err != nil {
		return err
	}
	// Every container now retains its layers, so what no image references
	// is garbage: the finished blobs and snapshots of a pull that a crash
	// interrupted (the partial ones went when the store opened).
	if err := images.Prune(ctx); err != nil {
		d.log.Warn("remove leftovers of interrupted pulls", "err", err)
	}
	monitors.Warm()

	if d.streams, err = d.startStreaming(containers, sandboxes); err != nil {
		return err
	}
	defer d.streams.Close()
	d.server = cri.New(cri.Config{
		Info: cri.Info{
			Version:      Version,
			CgroupDriver: d.cfg.CgroupDriver,
			Handlers:     handlers,
		},
		Sandboxes:  sandboxes,
		Containers: containers,
		Images:     images,
		Network:    pods,
		Streams:    d.streams,
		Usage: usage.New(usage.Config{Cgroups: stats.Config{
			Unified: cgroups.Mode() == cgroups.Unified,
			Systemd: d.cfg.CgroupDriver == "systemd",
		}}, containers, sandboxes, images),
		Events: d.events,
		Log:    d.log,
	})
	return d.serve(ctx)
}

func (d *Daemon) serve(ctx context.Context) error {
	lis, err := listen(d.cfg.Socket, 0o660)
	if err != nil {
		return err
	}
	d.grpc = grpc.NewServer(
		grpc.UnaryInterceptor(d.server.Interceptor),
		grpc.StreamInterceptor(d.server.StreamInterceptor),
		grpc.MaxRecvMsgSize(16<<20),
		// ExecSync answers with up to 16 MiB of stdout and as much of
		// stderr, plus the message's own framing.
		grpc.MaxSendMsgSize(2*ociruntime.DefaultExecOutputCap+1<<20),
	)
	runtimeapi.RegisterRuntimeServiceServer(d.grpc, d.server)
	runtimeapi.RegisterImageServiceServer(d.grpc, d.server)

	apiPath := filepath.Join(d.cfg.State, api.SocketName)
	apiLis, err := listen(apiPath, 0o600)
	if err != nil {
		lis.Close()
		return err
	}
	apiServer := &http.Server{Handler: api.Handler(d.images, d.log), ReadHeaderTimeout: 10 * time.Second}

	errc := make(chan error, 2)
	go func() { errc <- d.grpc.Serve(lis) }()
	go func() { errc <- apiServer.Serve(apiLis) }()
	close(d.ready)
	d.log.Info("crib is serving", "socket", d.cfg.Socket, "root", d.cfg.Root, "state", d.cfg.State, "version", Version)

	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", d.cfg.Socket, err)
	case <-ctx.Done():
	}
	d.log.Info("crib is shutting down; containers keep running")
	// Event streams last as long as their callers: end them, or the
	// graceful stop would wait for them.
	d.events.Close()
	stopped := make(chan struct{})
	go func() { d.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		d.grpc.Stop()
	}
	_ = apiServer.Close()
	_ = os.Remove(d.cfg.Socket)
	_ = os.Remove(apiPath)
	return nil
}

// listen opens a unix socket with mode, replacing a stale one.
func listen(path string, mode os.FileMode) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o711); err != nil {
		return nil, fmt.Errorf("create socket dir: %w", err)
	}
	if conn, err := net.DialTimeout("unix", path, time.Second); err == nil {
		conn.Close()
		return nil, fmt.Errorf("socket %s is in use: is another crib running?", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, mode); err != nil {
		lis.Close()
		return nil, fmt.Errorf("chmod socket: %w", err)
	}
	return lis, nil
}

// prepareRoots makes crib's directories and checks that they are writable.
func (d *Daemon) prepareRoots() error {
	for _, dir := range []string{d.cfg.Root, d.cfg.State} {
		if err := os.MkdirAll(dir, 0o711); err != nil {
			return fmt.Errorf("root %s is unusable: %w", dir, err)
		}
		probe, err := os.CreateTemp(dir, ".probe-*")
		if err != nil {
			return fmt.Errorf("root %s is unusable: %w", dir, err)
		}
		probe.Close()
		os.Remove(probe.Name())
	}
	return nil
}

func registries(in map[string]config.Registry) map[string]image.Registry {
	out := make(map[string]image.Registry, len(in))
	for host, r := range in {
		out[host] = image.Registry{Mirrors: r.Mirrors, Insecure: r.Insecure}
	}
	return out
}
