package kuberuntime

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/crib-dev/crib/internal/agent/backoff"
	"github.com/crib-dev/crib/internal/agent/plan"
	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/agent/podstatus"
)

// callLog is one ordered record of what the runtime, the hooks and the
// volumes were asked to do, so that tests can assert on the order across
// all three.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, fmt.Sprintf(format, args...))
}

// since returns the calls recorded after mark (a value of len).
func (l *callLog) since(mark int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls[mark:]...)
}

func (l *callLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.calls)
}

// withPrefix filters calls by prefix ("CreateContainer" etc.).
func withPrefix(calls []string, prefix string) []string {
	var out []string
	for _, c := range calls {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// indexOf returns the position of the first call equal to want, or -1.
func indexOf(calls []string, want string) int {
	for i, c := range calls {
		if c == want {
			return i
		}
	}
	return -1
}

// recRuntime is cri-api's fake runtime that also records the arguments the
// fake itself drops: configs, IDs and stop timeouts.
type recRuntime struct {
	*critest.FakeRuntimeService
	log *callLog

	mu       sync.Mutex
	created  []*runtimeapi.ContainerConfig
	sandbox  []*runtimeapi.PodSandboxConfig
	timeouts map[string][]int64
	statuses map[string]int
}

func newRecRuntime(log *callLog) *recRuntime {
	return &recRuntime{
		FakeRuntimeService: critest.NewFakeRuntimeService(),
		log:                log,
		timeouts:           map[string][]int64{},
		statuses:           map[string]int{},
	}
}

func (r *recRuntime) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	id, err := r.FakeRuntimeService.RunPodSandbox(ctx, cfg, handler)
	r.log.add("RunPodSandbox:%d", cfg.GetMetadata().GetAttempt())
	if err == nil {
		r.mu.Lock()
		r.sandbox = append(r.sandbox, cfg)
		r.mu.Unlock()
	}
	return id, err
}

func (r *recRuntime) CreateContainer(ctx context.Context, sb string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	r.log.add("CreateContainer:%s:%d", cfg.GetMetadata().GetName(), cfg.GetMetadata().GetAttempt())
	id, err := r.FakeRuntimeService.CreateContainer(ctx, sb, cfg, sbCfg)
	if err == nil {
		r.mu.Lock()
		r.created = append(r.created, cfg)
		r.mu.Unlock()
		// The fake drops resources; a runtime reports what it runs with.
		r.Lock()
		r.Containers[id].Resources = &runtimeapi.ContainerResources{Linux: cfg.GetLinux().GetResources()}
		r.Unlock()
	}
	return id, err
}

func (r *recRuntime) UpdateContainerResources(ctx context.Context, id string, res *runtimeapi.ContainerResources) error {
	r.log.add("UpdateContainerResources:%s:%d", id, res.GetLinux().GetMemoryLimitInBytes())
	if err := r.FakeRuntimeService.UpdateContainerResources(ctx, id, res); err != nil {
		return err
	}
	r.Lock()
	defer r.Unlock()
	if c, ok := r.Containers[id]; ok {
		c.Resources = res
	}
	return nil
}

func (r *recRuntime) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	r.log.add("UpdatePodSandboxResources:%s:%d", req.GetPodSandboxId(), req.GetResources().GetMemoryLimitInBytes())
	return r.FakeRuntimeService.UpdatePodSandboxResources(ctx, req)
}

func (r *recRuntime) StartContainer(ctx context.Context, id string) error {
	r.log.add("StartContainer:%s", id)
	return r.FakeRuntimeService.StartContainer(ctx, id)
}

func (r *recRuntime) StopContainer(ctx context.Context, id string, timeout int64) error {
	r.log.add("StopContainer:%s", id)
	r.mu.Lock()
	r.timeouts[id] = append(r.timeouts[id], timeout)
	r.mu.Unlock()
	return r.FakeRuntimeService.StopContainer(ctx, id, timeout)
}

func (r *recRuntime) RemoveContainer(ctx context.Context, id string) error {
	r.log.add("RemoveContainer:%s", id)
	return r.FakeRuntimeService.RemoveContainer(ctx, id)
}

func (r *recRuntime) StopPodSandbox(ctx context.Context, id string) error {
	r.log.add("StopPodSandbox:%s", id)
	return r.FakeRuntimeService.StopPodSandbox(ctx, id)
}

func (r *recRuntime) RemovePodSandbox(ctx context.Context, id string) error {
	r.log.add("RemovePodSandbox:%s", id)
	return r.FakeRuntimeService.RemovePodSandbox(ctx, id)
}

func (r *recRuntime) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	r.mu.Lock()
	r.statuses[id]++
	r.mu.Unlock()
	return r.FakeRuntimeService.ContainerStatus(ctx, id, verbose)
}

func (r *recRuntime) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	r.mu.Lock()
	r.statuses[id]++
	r.mu.Unlock()
	return r.FakeRuntimeService.PodSandboxStatus(ctx, id, verbose)
}

func (r *recRuntime) lastCreated() *runtimeapi.ContainerConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.created) == 0 {
		return nil
	}
	return r.created[len(r.created)-1]
}

func (r *recRuntime) stopTimeouts(id string) []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.timeouts[id]...)
}

// statusCalls counts ContainerStatus or PodSandboxStatus calls for id.
func (r *recRuntime) statusCalls(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.statuses[id]
}

// exit makes a container exit with code at time at, as a runtime would
// report it.
func (r *recRuntime) exit(t *testing.T, id string, code int32, at time.Time) {
	t.Helper()
	r.Lock()
	defer r.Unlock()
	c, ok := r.Containers[id]
	if !ok {
		t.Fatalf("exit: no container %q", id)
	}
	c.State = runtimeapi.ContainerState_CONTAINER_EXITED
	c.ExitCode = code
	c.FinishedAt = at.UnixNano()
	if code == 0 {
		c.Reason = "Completed"
	} else {
		c.Reason = "Error"
	}
}

// containerIDs lists the fake's containers by state.
func (r *recRuntime) containerIDs(state runtimeapi.ContainerState) []string {
	r.Lock()
	defer r.Unlock()
	var out []string
	for id, c := range r.Containers {
		if c.State == state {
			out = append(out, id)
		}
	}
	return out
}

func (r *recRuntime) allContainerIDs() map[string]bool {
	r.Lock()
	defer r.Unlock()
	out := map[string]bool{}
	for id := range r.Containers {
		out[id] = true
	}
	return out
}

func (r *recRuntime) allSandboxIDs() map[string]bool {
	r.Lock()
	defer r.Unlock()
	out := map[string]bool{}
	for id := range r.Sandboxes {
		out[id] = true
	}
	return out
}

// fakeVolumes records the calls of a kuberuntime.Volumes.
type fakeVolumes struct {
	log        *callLog
	prepareErr error
	subPathErr error
}

// Prepare gives each of the pod's volumes the host path /vol/<name>.
func (v *fakeVolumes) Prepare(_ context.Context, pod *corev1.Pod, _ map[string]*corev1.ConfigMap, _ map[string]*corev1.Secret) (map[string]string, error) {
	v.log.add("Volumes.Prepare:%s", pod.UID)
	if v.prepareErr != nil {
		return nil, v.prepareErr
	}
	paths := map[string]string{}
	for _, vol := range pod.Spec.Volumes {
		paths[vol.Name] = "/vol/" + vol.Name
	}
	return paths, nil
}

// PrepareSubPath records its arguments and returns
// /subpaths/<volume>/<container>/<index>.
func (v *fakeVolumes) PrepareSubPath(uid, volumeName, volumePath, subPath, container string, index int) (string, error) {
	v.log.add("Volumes.PrepareSubPath:%s:%s:%s:%s:%s:%d", uid, volumeName, volumePath, subPath, container, index)
	if v.subPathErr != nil {
		return "", v.subPathErr
	}
	return fmt.Sprintf("/subpaths/%s/%s/%d", volumeName, container, index), nil
}

func (v *fakeVolumes) Remove(_ context.Context, uid string) error {
	v.log.add("Volumes.Remove:%s", uid)
	return nil
}

func (v *fakeVolumes) TerminationMessagePath(string, string, uint32) (string, error) {
	return "", nil
}

// hookFunc is the signature of Config.Hooks.
type hookFunc func(ctx context.Context, pod *corev1.Pod, c *corev1.Container, containerID, podIP string, h *corev1.LifecycleHandler) error

// env is a Manager over the fakes with a fake clock.
type env struct {
	t   *testing.T
	ctx context.Context
	clk *clocktesting.FakeClock
	log *callLog
	rt  *recRuntime
	img *critest.FakeImageService
	vol *fakeVolumes
	m   *Manager

	// last and waiting are what the agent's record of each pod keeps
	// between syncs, by pod UID: its last observation and why its
	// containers wait.
	last    map[string]*PodRuntime
	waiting map[string]map[string]podstatus.Waiting

	hookMu sync.Mutex
	hook   hookFunc
}

func newEnv(t *testing.T, mutate ...func(*Config)) *env {
	t.Helper()
	log := &callLog{}
	e := &env{
		t:   t,
		ctx: context.Background(),
		// The fake runtime stamps StopContainer's FinishedAt with the real
		// time, so the fake clock starts at the real time too.
		clk: clocktesting.NewFakeClock(time.Now()),
		log: log,
		rt:  newRecRuntime(log),
		img: critest.NewFakeImageService(),
		vol: &fakeVolumes{log: log},

		last:    map[string]*PodRuntime{},
		waiting: map[string]map[string]podstatus.Waiting{},
	}
	e.img.SetFakeImages([]string{"busybox:1.36"})
	cfg := Config{
		Runtime: e.rt,
		Images:  e.img,
		Volumes: e.vol,
		Hooks: func(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id, podIP string, h *corev1.LifecycleHandler) error {
			e.hookMu.Lock()
			hook := e.hook
			e.hookMu.Unlock()
			if hook == nil {
				return nil
			}
			return hook(ctx, pod, c, id, podIP, h)
		},
		Clock:        e.clk,
		PodConfig:    podconfig.Options{NodeName: "node1"},
		CrashBackoff: backoff.New(backoff.Config{Initial: 10 * time.Second, Max: 40 * time.Second}, e.clk),
		PullBackoff:  backoff.New(backoff.Config{Initial: 10 * time.Second, Max: 40 * time.Second}, e.clk),
	}
	for _, m := range mutate {
		m(&cfg)
	}
	e.m = New(cfg)
	return e
}

func (e *env) setHook(h hookFunc) {
	e.hookMu.Lock()
	defer e.hookMu.Unlock()
	e.hook = h
}

// observe reads the pod from the runtime, from its last observation on.
func (e *env) observe(pod *corev1.Pod) *PodRuntime {
	e.t.Helper()
	uid := string(pod.UID)
	pr, err := e.m.ObservePod(e.ctx, uid, e.last[uid])
	if err != nil {
		e.t.Fatalf("ObservePod: %v", err)
	}
	e.last[uid] = pr
	return pr
}

// sync does what the agent's pod worker does: observe, collect garbage,
// sync, and keep what the sync learned of why containers wait.
func (e *env) sync(pod *corev1.Pod) SyncResult {
	e.t.Helper()
	pr := e.observe(pod)
	obs, err := e.m.CollectGarbage(e.ctx, pr)
	if err != nil {
		e.t.Fatalf("CollectGarbage: %v", err)
	}
	res := e.m.SyncPod(e.ctx, pod, obs, Data{})
	uid := string(pod.UID)
	e.waiting[uid] = res.Waiting.Apply(e.waiting[uid])
	e.last[uid] = e.last[uid].Forget(res.Resized)
	return res
}

// waitingOf says why the pod's containers wait after the syncs so far.
func (e *env) waitingOf(uid string) map[string]podstatus.Waiting { return e.waiting[uid] }

// mustSync syncs and fails the test on any error.
func (e *env) mustSync(pod *corev1.Pod) SyncResult {
	e.t.Helper()
	res := e.sync(pod)
	if res.Err != nil {
		e.t.Fatalf("SyncPod: %v", res.Err)
	}
	return res
}

// running returns the single running instance of a container name in the
// runtime, failing if there is not exactly one.
func (e *env) running(pod *corev1.Pod, name string) plan.Container {
	e.t.Helper()
	var found []plan.Container
	for _, c := range e.observe(pod).Observed.Containers {
		if c.Name == name && c.State == plan.ContainerRunning {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		e.t.Fatalf("running instances of %q: got %d, want 1: %+v", name, len(found), found)
	}
	return found[0]
}

func ptr[T any](v T) *T { return &v }

// testPod is a defaulted pod with one app container "app".
func testPod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{testContainer("app")},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			DNSPolicy:                     corev1.DNSClusterFirst,
			TerminationGracePeriodSeconds: ptr(int64(30)),
			SecurityContext:               &corev1.PodSecurityContext{},
			NodeName:                      "node1",
		},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func testContainer(name string) corev1.Container {
	return corev1.Container{
		Name:                     name,
		Image:                    "busybox:1.36",
		Command:                  []string{"sleep", "3600"},
		ImagePullPolicy:          corev1.PullIfNotPresent,
		TerminationMessagePath:   "/dev/termination-log",
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
}
