package daemon

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/containerd/cgroups/v3"

	"github.com/crib-dev/crib/internal/cdi"
	"github.com/crib-dev/crib/internal/checkpoint"
	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/cri"
	"github.com/crib-dev/crib/internal/ids"
	"github.com/crib-dev/crib/internal/kernelstats"
	"github.com/crib-dev/crib/internal/lifecycle"
	"github.com/crib-dev/crib/internal/metastore"
	"github.com/crib-dev/crib/internal/monitor"
	"github.com/crib-dev/crib/internal/netns"
	"github.com/crib-dev/crib/internal/network"
	"github.com/crib-dev/crib/internal/nshold"
	"github.com/crib-dev/crib/internal/ociruntime"
	"github.com/crib-dev/crib/internal/ocispec"
	"github.com/crib-dev/crib/internal/resclass"
	"github.com/crib-dev/crib/internal/sandbox"
	"github.com/crib-dev/crib/internal/statsservice"
	"github.com/crib-dev/crib/internal/systemd"
)

// build makes every part in dependency order, recording in d.opened how
// to close what it opens.
func (d *Daemon) build(ctx context.Context) error {
	// First: the runtimes' probe of user namespaces mounts in the root.
	if err := d.prepareRoots(); err != nil {
		return err
	}
	runtimes, handlers, err := d.runtimes(ctx, d.cfg)
	if err != nil {
		return err
	}
	db, err := d.openStores(ctx)
	if err != nil {
		return err
	}
	pods, err := d.startNetwork()
	if err != nil {
		return err
	}
	// Nobody subscribes before the socket is served, so what restore
	// publishes goes nowhere: a new subscriber relists instead.
	d.events = lifecycle.NewBroadcaster[lifecycle.Event](lifecycle.DefaultBuffer)
	d.opened.add("event streams", func() error { d.events.Close(); return nil })
	if err := d.buildManagers(db, pods, runtimes); err != nil {
		return err
	}
	if d.streams, err = d.listenStreaming(); err != nil {
		return err
	}
	if err := d.listenMetrics(); err != nil {
		return err
	}
	d.server = cri.New(cri.Config{
		Info: cri.Info{
			Version:      Version,
			CgroupDriver: d.cfg.CgroupDriver,
			Handlers:     handlers,
		},
		Sandboxes:   d.sandboxes,
		Containers:  d.containers,
		Checkpoints: d.checkpoints,
		Images:      d.images,
		Network:     pods,
		Streams:     d.streams,
		Usage: statsservice.New(statsservice.Config{Cgroups: kernelstats.Config{
			Unified: cgroups.Mode() == cgroups.Unified,
			Systemd: d.cfg.CgroupDriver == "systemd",
		}}, d.containers, d.sandboxes, d.images),
		Events: d.events,
		RPCs:   d.metrics,
		Log:    d.log,
	})
	return nil
}

// startNetwork loads the CNI configuration and watches its directory
// until Shutdown.
func (d *Daemon) startNetwork() (*network.Manager, error) {
	pods := network.New(network.Config{
		ConfDir:    d.cfg.Network.ConfDir,
		PluginDirs: d.cfg.Network.PluginDirs,
		CacheDir:   filepath.Join(d.cfg.Root, "cni", "cache"),
		Defaults:   networkDefaults(d.cfg),
		Observer:   d.metrics,
	}, d.log)
	watch, stopWatch := context.WithCancel(context.Background())
	if err := pods.Start(watch); err != nil {
		stopWatch()
		return nil, err
	}
	d.opened.add("network watch", func() error { stopWatch(); return nil })
	d.network = pods
	return pods, nil
}

// buildManagers makes the sandbox and container managers and the monitor
// pool they start containers' monitors from.
func (d *Daemon) buildManagers(db *metastore.DB, pods *network.Manager, runtimes map[string]*ociruntime.Runtime) error {
	hostCaps, err := ocispec.ReadHostCaps()
	if err != nil {
		return err
	}
	sd, err := d.systemdClient()
	if err != nil {
		return err
	}
	// One network namespace waits ahead of need too: the kernel takes
	// longer to make it than the rest of a pod's namespaces.
	d.netnsSpares = netns.NewSpares(1, d.log)
	d.opened.add("spare network namespaces", func() error { d.netnsSpares.Close(); return nil })
	// The pods' namespaces are held by one process of their own, started
	// at the first pod, so that pinning them adds nothing to the host's
	// mount table; a holder that outlived a daemon is taken over.
	// A state directory whose paths the holder cannot carry pins with
	// bind mounts, as before the holder.
	var nsHold netns.Holder
	holdSocket := filepath.Join(d.cfg.State, "nshold.sock")
	longestKey := filepath.Join(d.cfg.State, "sandboxes", ids.New(), "ns", string(netns.User))
	if err := nshold.CheckPaths(holdSocket, longestKey); err != nil {
		d.log.Warn("pods' namespaces are pinned by bind mounts, not held", "err", err)
	} else {
		d.nshold = &nshold.Lazy{Bin: d.monitorBin, Socket: holdSocket, LogPath: filepath.Join(d.cfg.State, "nshold.log")}
		d.opened.add("namespace holder connection", d.nshold.Close)
		nsHold = d.nshold
	}
	cdiRegistry := cdi.New(d.cfg.CDI.SpecDirs)
	var sbPlugins sandbox.Plugins
	var ctrPlugins container.Plugins
	classes, err := resclass.Load(d.cfg.BlockIOConfigFile, d.cfg.RdtConfigFile, d.log)
	if err != nil {
		return err
	}
	if err := d.buildNRI(cdiRegistry, classes); err != nil {
		return err
	}
	if d.nri != nil {
		sbPlugins, ctrPlugins = d.nri, d.nri
	}
	d.sandboxes = sandbox.New(sandbox.Config{
		StateDir:     filepath.Join(d.cfg.State, "sandboxes"),
		PauseBinary:  d.monitorBin,
		ShmSize:      d.cfg.ShmSize,
		CgroupDriver: d.cfg.CgroupDriver,
		CgroupParent: d.cfg.CgroupParent,
		Systemd:      sd,
		Events:       d.events,
		Tracer:       d.metrics,
		NetNSSpares:  d.netnsSpares,
		NSHold:       nsHold,
		// The container manager knows the handlers' runtimes; it is made
		// next, before any request.
		UserNamespaces: func(handler string) error { return d.containers.UserNamespaces(handler) },
		Plugins:        sbPlugins,
	}, db, pods, d.log)
	// One monitor waits ahead of need: a container start then waits for
	// no process start-up but the OCI runtime's.
	d.monitors = monitor.NewPool(d.monitorBin, 1)
	d.opened.add("idle monitors", func() error { d.monitors.Close(); return nil })
	d.containers = container.New(container.Config{
		BundleDir:         filepath.Join(d.cfg.Root, "containers"),
		StateDir:          filepath.Join(d.cfg.State, "containers"),
		Monitors:          d.monitors,
		Runtimes:          runtimes,
		CgroupDriver:      d.cfg.CgroupDriver,
		CgroupV2:          cgroups.Mode() == cgroups.Unified,
		OOMScoreAdjMin:    oomScoreAdjMin(),
		HostCaps:          hostCaps,
		Hugetlb:           hasController("hugetlb"),
		Events:            d.events,
		Tracer:            d.metrics,
		CDI:               cdiRegistry,
		Classes:           classes,
		Plugins:           ctrPlugins,
		Criu:              d.cfg.Checkpoint.CriuPath,
		CriuNoBreakpoints: d.cfg.Checkpoint.CriuNoBreakpoints,
		LayerLimits:       LayerLimits(d.cfg),
	}, db, d.images, d.sandboxes, d.log)
	d.opened.add("container watches", func() error { d.containers.Close(); return nil })
	d.checkpoints = checkpoint.New(checkpoint.Config{
		Criu:          d.cfg.Checkpoint.CriuPath,
		NoBreakpoints: d.cfg.Checkpoint.CriuNoBreakpoints,
		SyncArchive:   d.cfg.Checkpoint.SyncArchive,
		WorkDir:       filepath.Join(d.cfg.Root, "checkpoints"),
	}, d.containers, checkpointPods{d.sandboxes, d.containers}, d.log)
	return nil
}

// systemdClient is the client of systemd's D-Bus API when systemd runs,
// else nil. It connects on first use: under cgroupfs, only to stop the
// slices of pods made before a switch from the systemd driver.
func (d *Daemon) systemdClient() (*systemd.Client, error) {
	if !systemd.Booted() {
		if d.cfg.CgroupDriver == "systemd" {
			return nil, fmt.Errorf("cgroup_driver is systemd, but systemd is not running on this host")
		}
		return nil, nil
	}
	sd := systemd.New()
	d.opened.add("systemd connection", func() error { sd.Close(); return nil })
	return sd, nil
}
