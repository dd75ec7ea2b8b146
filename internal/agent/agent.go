package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	"k8s.io/utils/clock"

	"github.com/crib-dev/crib/internal/agent/backoff"
	"github.com/crib-dev/crib/internal/agent/kuberuntime"
	"github.com/crib-dev/crib/internal/agent/podcgroup"
	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/agent/podworker"
	"github.com/crib-dev/crib/internal/agent/prober"
	"github.com/crib-dev/crib/internal/agent/source"
	"github.com/crib-dev/crib/internal/agent/statusapi"
	"github.com/crib-dev/crib/internal/agent/userns"
	"github.com/crib-dev/crib/internal/agent/volume"
	"github.com/crib-dev/crib/internal/systemd"
)

// Config is the agent's configuration. Zero durations take the defaults
// named beside them.
type Config struct {
	// ManifestDir is watched for Pod, ConfigMap and Secret manifests.
	// Ignored when Snapshots is set.
	ManifestDir string
	// Snapshots, when set, replaces the directory watch: `crib run` feeds
	// its one file through it.
	Snapshots <-chan source.Snapshot
	NodeName  string
	// Root holds the agent's own files: pod volumes under Root/pods.
	Root string
	// PodConfig says how pods become CRI configs (log root, cgroups, DNS).
	PodConfig podconfig.Options
	// StatusAddr is the status API's TCP address; empty serves none.
	StatusAddr string
	// CgroupDriver, when set ("cgroupfs" or "systemd", as the runtime's),
	// has the agent make each pod's cgroup under CgroupRoot per QoS
	// class, as the kubelet does; empty leaves pod cgroups to the runtime.
	CgroupDriver string
	CgroupRoot   string // "kubepods"
	// UserNamespaces is the node's range of host ids, from which each pod
	// with hostUsers: false gets a block of 65536; zero means
	// userns.DefaultRange, the kubelet's when /etc/subuid names none.
	UserNamespaces userns.Range

	Runtime internalapi.RuntimeService
	Images  internalapi.ImageManagerService
	// PullProgress, when set, tells how far the runtime got with a pull,
	// which the CRI cannot: a pod waiting for its image then shows the
	// percent. Nil shows no percent.
	PullProgress PullProgress

	RelistInterval       time.Duration // 1s
	ResyncInterval       time.Duration // 10s
	HousekeepingInterval time.Duration // 2s
	// ErrorRequeue is how soon a pod whose sync failed is synced again (1s).
	ErrorRequeue time.Duration
	CrashBackoff backoff.Config // 10s doubling to 5m, reset after 10m
	Clock        clock.WithTickerAndDelayedExecution
	Log          *slog.Logger
}

// Agent runs the pods of its manifests on a CRI runtime.
type Agent struct {
	cfg     Config
	log     *slog.Logger
	store   *statusapi.Store
	events  *statusapi.Events
	metrics *statusapi.Metrics
	volumes *volume.Manager
	cgroups *podcgroup.Manager // nil without CgroupDriver
	// userns holds the blocks of host ids of pods with hostUsers: false;
	// nil, with usernsErr saying why, for a node range that is not valid.
	userns    *userns.Manager
	usernsErr error

	// Built in Run.
	rt           *kuberuntime.Manager
	probes       *prober.Manager
	workers      *podworker.Workers
	crashBackoff *backoff.Backoff
	pullBackoff  *backoff.Backoff

	// table holds the record of every pod the agent knows of; it alone
	// changes one (see podTable).
	table *podTable
	// qosSet and lastUsageCheck are the sync loop's own.
	// qosSet records that the QoS cgroups got their shares once; after
	// that, only a change of pods changes them.
	qosSet bool
	// lastUsageCheck is when emptyDir usage was last measured.
	lastUsageCheck time.Time
}

// New returns an agent. It does no I/O but, with the systemd cgroup
// driver, a stat to tell whether systemd runs.
func New(cfg Config) *Agent {
	if cfg.RelistInterval <= 0 {
		cfg.RelistInterval = time.Second
	}
	if cfg.ResyncInterval <= 0 {
		cfg.ResyncInterval = 10 * time.Second
	}
	if cfg.HousekeepingInterval <= 0 {
		cfg.HousekeepingInterval = 2 * time.Second
	}
	if cfg.ErrorRequeue <= 0 {
		cfg.ErrorRequeue = time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	var cgroups *podcgroup.Manager
	if cfg.CgroupDriver != "" {
		if cfg.CgroupRoot == "" {
			cfg.CgroupRoot = "kubepods"
		}
		pc := podcgroup.Config{Root: cfg.CgroupRoot, Driver: cfg.CgroupDriver}
		// Without systemd, the Manager's methods all say it is not running.
		if cfg.CgroupDriver == "systemd" && systemd.Booted() {
			pc.Systemd = systemd.New() // connects on first use
		}
		cgroups = podcgroup.New(pc, cfg.Log)
		cfg.PodConfig.CgroupParent = cgroups.CgroupParent()
	}
	podsRoot := filepath.Join(cfg.Root, "pods")
	if cfg.UserNamespaces == (userns.Range{}) {
		cfg.UserNamespaces = userns.DefaultRange
	}
	ids, idsErr := userns.New(podsRoot, cfg.UserNamespaces, cfg.Log)
	return &Agent{
		userns:    ids,
		usernsErr: idsErr,
		cgroups:   cgroups,
		cfg:       cfg,
		log:       cfg.Log,
		store:     statusapi.NewStore(),
		events:    statusapi.NewEvents(statusapi.EventsConfig{Clock: cfg.Clock, Logger: cfg.Log, Host: cfg.NodeName}),
		metrics:   statusapi.NewMetrics(),
		volumes:   volume.New(volume.Config{Root: podsRoot}, cfg.Log),
		table:     newPodTable(),
	}
}

// Store is the agent's pod status store; `crib run` watches it.
func (a *Agent) Store() *statusapi.Store { return a.store }

// Events are the events the agent recorded.
func (a *Agent) Events() *statusapi.Events { return a.events }

// Run runs the sync loop until ctx is done. Pods keep running after it
// returns.
func (a *Agent) Run(ctx context.Context) error {
	if a.cfg.Runtime == nil || a.cfg.Images == nil {
		return errors.New("agent: no runtime")
	}
	if a.usernsErr != nil {
		return fmt.Errorf("agent: user namespaces: %w", a.usernsErr)
	}
	// Every block a pod directory records is held before any pod syncs,
	// so that a pod running from before keeps its own and no other pod
	// gets it.
	if err := a.userns.Load(); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	var cgroups kuberuntime.Cgroups
	if a.cgroups != nil {
		if err := a.cgroups.Setup(); err != nil {
			return fmt.Errorf("agent: pod cgroups: %w", err)
		}
		cgroups = a.cgroups
	}
	a.crashBackoff = backoff.New(a.cfg.CrashBackoff, a.cfg.Clock)
	a.pullBackoff = backoff.New(a.cfg.CrashBackoff, a.cfg.Clock)
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	a.workers = podworker.New(workCtx, a.syncPod, a.cfg.Clock)
	a.probes = prober.NewManager(prober.Config{
		Exec:     a.cfg.Runtime,
		Clock:    a.cfg.Clock,
		OnChange: func(uid string) { a.workers.Sync(uid) },
		OnResult: func(k prober.Kind, r prober.Result) { a.metrics.ProbeResult(k.String(), r.String()) },
		Log:      a.log,
	})
	a.rt = kuberuntime.New(kuberuntime.Config{
		Runtime:        a.cfg.Runtime,
		Images:         a.cfg.Images,
		Volumes:        podDirs{a.volumes, a.userns},
		Cgroups:        cgroups,
		UserNamespaces: a.userns,
		Probes:         a.probes,
		Recorder:       a.events,
		Hooks:          a.probes.RunHandler,
		Clock:          a.cfg.Clock,
		PodConfig:      a.cfg.PodConfig,
		CrashBackoff:   a.crashBackoff,
		PullBackoff:    a.pullBackoff,
		Pulling:        a.watchPull,
		Log:            a.log,
	})

	snapshots := a.cfg.Snapshots
	var wg sync.WaitGroup
	defer wg.Wait()
	if snapshots == nil {
		ch := make(chan source.Snapshot)
		snapshots = ch
		w := source.NewWatcher(a.cfg.ManifestDir, source.Options{NodeName: a.cfg.NodeName}, a.log)
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(ctx, ch) }()
	}
	if a.cfg.StatusAddr != "" {
		h := statusapi.Handler(a.store, a.events, a.metrics, statusapi.WithHealthCheck(a.healthy))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := statusapi.Serve(ctx, a.cfg.StatusAddr, h); err != nil {
				a.log.Error("status API is not serving", "addr", a.cfg.StatusAddr, "err", err)
			}
		}()
	}
	wg.Add(1)
	go func() { defer wg.Done(); a.watchEvents(ctx) }()
	a.log.Info("agent is running", "manifests", a.cfg.ManifestDir, "status", a.cfg.StatusAddr)
	err := a.loop(ctx, snapshots)
	cancelWork()
	a.workers.Stop()
	a.probes.Stop()
	return err
}

func (a *Agent) healthy() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := a.cfg.Runtime.Version(ctx, "v1"); err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	return nil
}
