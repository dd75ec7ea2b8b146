package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	"k8s.io/utils/clock"

	"github.com/crib-dev/crib/internal/agent/backoff"
	"github.com/crib-dev/crib/internal/agent/kuberuntime"
	"github.com/crib-dev/crib/internal/agent/podcgroup"
	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/agent/podworker"
	"github.com/crib-dev/crib/internal/agent/prober"
	"github.com/crib-dev/crib/internal/agent/source"
	"github.com/crib-dev/crib/internal/agent/status"
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

	Runtime internalapi.RuntimeService
	Images  internalapi.ImageManagerService

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
	store   *status.Store
	events  *status.Events
	metrics *status.Metrics
	volumes *volume.Manager
	cgroups *podcgroup.Manager // nil without CgroupDriver

	// Built in Run.
	rt           *kuberuntime.Manager
	probes       *prober.Manager
	workers      *podworker.Workers
	crashBackoff *backoff.Backoff
	pullBackoff  *backoff.Backoff

	mu sync.Mutex
	// desired are the pods the manifests ask for, by UID.
	desired map[string]*corev1.Pod
	data    kuberuntime.Data
	// known is the last spec of every pod the agent has run, so that a pod
	// whose manifest went can still be stopped with its hooks.
	known map[string]*corev1.Pod
	// firstSeen is when the agent first saw each pod; started records pods
	// whose start latency is already measured.
	firstSeen map[string]time.Time
	started   map[string]bool
	// fingerprints is what each pod looked like at the last relist.
	fingerprints map[string]string
	// admitted and rejected record admission decisions by UID.
	admitted map[string]bool
	rejected map[string]*rejection
	// fresh marks pods whose manifest changed since their status was last
	// computed: the new version's status does not build on the old one's.
	fresh map[string]bool
	// evicted holds why a pod was evicted; it stays down until its
	// manifest changes.
	evicted map[string]string
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
	return &Agent{
		cgroups:      cgroups,
		cfg:          cfg,
		log:          cfg.Log,
		store:        status.NewStore(),
		events:       status.NewEvents(status.EventsConfig{Clock: cfg.Clock, Logger: cfg.Log, Host: cfg.NodeName}),
		metrics:      status.NewMetrics(),
		volumes:      volume.New(volume.Config{Root: filepath.Join(cfg.Root, "pods")}, cfg.Log),
		desired:      map[string]*corev1.Pod{},
		known:        map[string]*corev1.Pod{},
		firstSeen:    map[string]time.Time{},
		started:      map[string]bool{},
		fingerprints: map[string]string{},
		evicted:      map[string]string{},
		fresh:        map[string]bool{},
		admitted:     map[string]bool{},
		rejected:     map[string]*rejection{},
	}
}

// Store is the agent's pod status store; `crib run` watches it.
func (a *Agent) Store() *status.Store { return a.store }

// Events are the events the agent recorded.
func (a *Agent) Events() *status.Events { return a.events }

// Run runs the sync loop until ctx is done. Pods keep running after it
// returns.
func (a *Agent) Run(ctx context.Context) error {
	if a.cfg.Runtime == nil || a.cfg.Images == nil {
		return errors.New("agent: no runtime")
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
		Runtime:      a.cfg.Runtime,
		Images:       a.cfg.Images,
		Volumes:      a.volumes,
		Cgroups:      cgroups,
		Probes:       a.probes,
		Recorder:     a.events,
		Hooks:        a.probes.RunHandler,
		Clock:        a.cfg.Clock,
		PodConfig:    a.cfg.PodConfig,
		CrashBackoff: a.crashBackoff,
		PullBackoff:  a.pullBackoff,
		Log:          a.log,
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
		h := status.Handler(a.store, a.events, a.metrics, status.WithHealthCheck(a.healthy))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := status.Serve(ctx, a.cfg.StatusAddr, h); err != nil {
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

// apply takes a new manifest snapshot and, when sync is set, syncs every
// pod it adds, changes or removes.
func (a *Agent) apply(snap source.Snapshot, sync bool) {
	next := map[string]*corev1.Pod{}
	for _, p := range snap.Pods {
		next[string(p.UID)] = p
	}
	errs := make([]status.SourceError, 0, len(snap.Errors))
	for _, e := range snap.Errors {
		errs = append(errs, status.SourceError{Path: e.Path, Message: e.Error()})
		a.events.Record(corev1.ObjectReference{Kind: "Manifest", Name: e.Path}, corev1.EventTypeWarning, "InvalidManifest", e.Error())
	}
	a.store.SetSourceErrors(errs)

	a.mu.Lock()
	var changed []string
	for uid, p := range next {
		old, ok := a.desired[uid]
		if !ok || !podEqual(old, p) {
			changed = append(changed, uid)
			delete(a.evicted, uid)
			a.forgetAdmission(uid)
			if ok {
				a.fresh[uid] = true
			}
		}
		a.known[uid] = p
		if _, ok := a.firstSeen[uid]; !ok {
			a.firstSeen[uid] = a.cfg.Clock.Now()
		}
	}
	for uid := range a.desired {
		if _, ok := next[uid]; !ok {
			changed = append(changed, uid)
			a.forgetAdmission(uid)
		}
	}
	dataChanged := !dataEqual(a.data, snap)
	a.desired = next
	a.data = kuberuntime.Data{ConfigMaps: snap.ConfigMaps, Secrets: snap.Secrets}
	if dataChanged {
		// ConfigMap and Secret volumes of every pod may need new content.
		changed = changed[:0]
		for uid := range next {
			changed = append(changed, uid)
		}
		for uid := range a.known {
			if _, ok := next[uid]; !ok {
				changed = append(changed, uid)
			}
		}
	}
	a.mu.Unlock()
	if len(changed) > 0 || !a.qosSet {
		a.qosSet = true
		a.updateQOS(snap.Pods)
	}
	if !sync {
		return
	}
	for _, uid := range changed {
		a.workers.Sync(uid)
	}
}

// updateQOS gives the QoS cgroups their CPU shares from the pods the node
// runs, as the kubelet does whenever pods come, go or change.
func (a *Agent) updateQOS(pods []*corev1.Pod) {
	if a.cgroups == nil {
		return
	}
	if err := a.cgroups.UpdateQOS(pods); err != nil {
		a.log.Warn("update QoS cgroups", "err", err)
	}
}

func (a *Agent) desiredUIDs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.desired))
	for uid := range a.desired {
		out = append(out, uid)
	}
	return out
}

// desiredPod returns the pod's spec and the data it may draw on, or nil
// when no manifest asks for it.
func (a *Agent) desiredPod(uid string) (*corev1.Pod, *corev1.Pod, kuberuntime.Data) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.desired[uid], a.known[uid], a.data
}

// storeStatus records a pod's status and the metrics it implies.
func (a *Agent) storeStatus(pod *corev1.Pod, st corev1.PodStatus) {
	uid := string(pod.UID)
	prev, hadPrev := a.store.Get(types.UID(uid))
	a.store.Set(pod, st)
	if hadPrev {
		old := map[string]int32{}
		for _, c := range append(prev.Status.InitContainerStatuses, prev.Status.ContainerStatuses...) {
			old[c.Name] = c.RestartCount
		}
		for _, c := range append(st.InitContainerStatuses, st.ContainerStatuses...) {
			if c.RestartCount > old[c.Name] {
				a.metrics.ContainerRestarted(pod.Namespace, pod.Name, c.Name)
			}
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.started[uid] && allRunning(st) {
		a.started[uid] = true
		a.metrics.ObservePodStart(a.cfg.Clock.Since(a.firstSeen[uid]))
	}
}

func allRunning(st corev1.PodStatus) bool {
	if len(st.ContainerStatuses) == 0 {
		return false
	}
	for _, c := range st.ContainerStatuses {
		if c.State.Running == nil {
			return false
		}
	}
	return true
}
