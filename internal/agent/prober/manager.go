package prober

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// DefaultUserAgent is sent by HTTP and gRPC probes and hooks when
// Config.UserAgent is empty.
const DefaultUserAgent = "crib-probe/0.1"

// Config holds the manager's collaborators. Only Exec is needed for exec
// probes; every other field has a usable zero value.
type Config struct {
	// Exec runs exec probes and hooks in containers.
	Exec Exec
	// Clock paces the workers; nil means the real clock.
	Clock clock.WithTicker
	// OnChange is called from a worker goroutine after a cached result of one
	// of the pod's containers changed. It must not block for long, and may call
	// back into the manager.
	OnChange func(podUID string)
	// OnResult is called after every probe run with its raw result (before
	// thresholds); meant for metrics. Optional.
	OnResult func(kind Kind, result Result)
	// Log receives one line per result change; nil discards.
	Log *slog.Logger
	// Dial opens network connections for HTTP, TCP and gRPC probes; nil
	// means a net.Dialer.
	Dial DialFunc
	// UserAgent for HTTP and gRPC probes; empty means DefaultUserAgent.
	UserAgent string
}

// Running describes a running container of a pod.
type Running struct {
	ID        string
	StartedAt time.Time
}

// Manager keeps one probe worker per running container and probe kind, and
// their results.
type Manager struct {
	cfg      Config
	handlers handlers

	mu         sync.Mutex
	stopped    bool
	pods       map[string]map[string]*containerEntry // pod UID -> container name -> entry
	containers map[string]*containerEntry            // container ID -> entry

	wg   sync.WaitGroup
	live atomic.Int64 // worker goroutines running, for tests
}

// containerEntry is one running container the manager knows about. Its
// mutable fields are guarded by Manager.mu.
type containerEntry struct {
	podUID    string
	name      string
	id        string
	startedAt time.Time
	pod       *corev1.Pod
	container *corev1.Container
	podIP     string

	probes  [numKinds]*corev1.Probe
	results [numKinds]Result
	message [numKinds]string
	workers [numKinds]*worker
}

// NewManager returns a manager with no workers. It does no I/O.
func NewManager(cfg Config) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	return &Manager{
		cfg:        cfg,
		handlers:   handlers{exec: cfg.Exec, dial: cfg.Dial, userAgent: cfg.UserAgent},
		pods:       map[string]map[string]*containerEntry{},
		containers: map[string]*containerEntry{},
	}
}

// Sync makes the workers of one pod match its spec and its running
// containers (container name -> Running). Every running app container and
// restartable init container is recorded, and gets a worker per probe it
// declares; containers that are gone or restarted (new ID) lose their
// workers and results.
func (m *Manager) Sync(pod *corev1.Pod, podIP string, containers map[string]Running) {
	uid := string(pod.UID)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	old := m.pods[uid]
	next := map[string]*containerEntry{}
	for _, c := range probedContainers(pod) {
		r, ok := containers[c.Name]
		if !ok || r.ID == "" {
			continue
		}
		e := old[c.Name]
		if e != nil && e.id == r.ID {
			e.pod, e.container, e.podIP = pod, c, podIP
			next[c.Name] = e
			continue
		}
		if other := m.containers[r.ID]; other != nil {
			// The same container under another name or pod: replace it.
			m.dropLocked(other)
		}
		e = m.addLocked(pod, c, podIP, r)
		next[c.Name] = e
	}
	for name, e := range old {
		if next[name] != e {
			m.dropLocked(e)
		}
	}
	if len(next) == 0 {
		delete(m.pods, uid)
		return
	}
	m.pods[uid] = next
}

// probedContainers lists the containers that may carry probes: the app
// containers and the init containers that keep running (sidecars).
func probedContainers(pod *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// addLocked records a running container and starts its workers.
func (m *Manager) addLocked(pod *corev1.Pod, c *corev1.Container, podIP string, r Running) *containerEntry {
	e := &containerEntry{
		podUID: string(pod.UID), name: c.Name, id: r.ID, startedAt: r.StartedAt,
		pod: pod, container: c, podIP: podIP,
	}
	e.probes[Liveness] = c.LivenessProbe
	e.probes[Readiness] = c.ReadinessProbe
	e.probes[Startup] = c.StartupProbe
	// The kubelet's starting values: alive until proven dead, not ready until
	// proven ready, not started until proven started.
	e.results[Liveness] = Success
	e.results[Readiness] = Failure
	e.results[Startup] = Unknown
	m.containers[r.ID] = e
	for k := Kind(0); k < numKinds; k++ {
		if e.probes[k] == nil {
			e.results[k] = Unknown
			continue
		}
		e.workers[k] = m.startWorker(e, k)
	}
	return e
}

// dropLocked stops a container's workers and forgets its results.
func (m *Manager) dropLocked(e *containerEntry) {
	for k, w := range e.workers {
		if w != nil {
			w.cancel()
			e.workers[k] = nil
		}
	}
	if m.containers[e.id] == e {
		delete(m.containers, e.id)
	}
	if byName := m.pods[e.podUID]; byName != nil && byName[e.name] == e {
		delete(byName, e.name)
	}
}

// RemovePod stops every worker of the pod and forgets its results. It does
// not wait for the workers to return (Stop does); a stopped worker never
// writes a result again.
func (m *Manager) RemovePod(podUID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.pods[podUID] {
		m.dropLocked(e)
	}
	delete(m.pods, podUID)
}

// Stop stops every worker and waits for all of them to return. Sync does
// nothing afterwards.
func (m *Manager) Stop() {
	m.mu.Lock()
	m.stopped = true
	for uid, byName := range m.pods {
		for _, e := range byName {
			m.dropLocked(e)
		}
		delete(m.pods, uid)
	}
	m.mu.Unlock()
	m.wg.Wait()
}

// Result returns the cached result of the container's probe of kind k:
// Unknown when the container or the probe is not known.
func (m *Manager) Result(containerID string, k Kind) Result {
	if k < 0 || k >= numKinds {
		return Unknown
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.containers[containerID]; e != nil {
		return e.results[k]
	}
	return Unknown
}

// Message returns what the last probe of kind k that changed the cached
// result said (the output of a failed command, an HTTP status...).
func (m *Manager) Message(containerID string, k Kind) string {
	if k < 0 || k >= numKinds {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.containers[containerID]; e != nil {
		return e.message[k]
	}
	return ""
}

// Started reports whether the container has started: true when it has no
// startup probe, else once that probe succeeded. A container never passed to
// Sync as running is not started.
func (m *Manager) Started(containerID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.containers[containerID]
	return e != nil && startedLocked(e)
}

func startedLocked(e *containerEntry) bool {
	return e.probes[Startup] == nil || e.results[Startup] == Success
}

// Ready reports whether the container is ready: started, and either without
// a readiness probe or with a readiness probe whose result is Success.
func (m *Manager) Ready(containerID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.containers[containerID]
	if e == nil || !startedLocked(e) {
		return false
	}
	return e.probes[Readiness] == nil || e.results[Readiness] == Success
}

// RunHandler runs a lifecycle hook with the manager's runtime, clock and
// dialer; see the package-level RunHandler.
func (m *Manager) RunHandler(ctx context.Context, pod *corev1.Pod, c *corev1.Container, containerID, podIP string, h *corev1.LifecycleHandler) error {
	return RunHandler(ctx, m.cfg.Exec, pod, c, containerID, podIP, h,
		WithClock(m.cfg.Clock), WithDial(m.cfg.Dial), WithUserAgent(m.cfg.UserAgent))
}
