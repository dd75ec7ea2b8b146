package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/agent/source"
)

// twoPods is a manifest file with pods "web" and "db".
const twoPods = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
  volumes:
  - name: scratch
    emptyDir: {}
---
apiVersion: v1
kind: Pod
metadata:
  name: db
spec:
  containers:
  - name: db
    image: busybox:1.36
    command: [sleep, "3600"]
`

// mutating are the CRI calls that change something; the rest only observe.
var mutating = map[string]bool{
	"RunPodSandbox": true, "StopPodSandbox": true, "RemovePodSandbox": true,
	"CreateContainer": true, "StartContainer": true, "StopContainer": true, "RemoveContainer": true,
	"UpdateContainerResources": true, "ExecSync": true,
}

// loadPods decodes the manifest as the agent's source would, with defaults
// and UIDs.
func loadPods(t *testing.T, manifest string) source.Snapshot {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pods.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := source.LoadFile(path, source.Options{NodeName: "node1"})
	if err != nil {
		t.Fatalf("load manifest: %v", err)
	}
	return snap
}

// only returns snap with just the named pods.
func only(snap source.Snapshot, names ...string) source.Snapshot {
	out := snap
	out.Pods = nil
	for _, p := range snap.Pods {
		for _, n := range names {
			if p.Name == n {
				out.Pods = append(out.Pods, p)
			}
		}
	}
	return out
}

func podNamed(t *testing.T, snap source.Snapshot, name string) *corev1.Pod {
	t.Helper()
	for _, p := range snap.Pods {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no pod %q in the snapshot", name)
	return nil
}

// runtimeFakes is one runtime that outlives the agents run on it.
type runtimeFakes struct {
	rt  *critest.FakeRuntimeService
	img *critest.FakeImageService
	clk *clocktesting.FakeClock
	// root is the agents' Root: a restarted agent has the same files.
	root string
}

func newRuntimeFakes(t *testing.T) *runtimeFakes {
	f := &runtimeFakes{
		rt:   critest.NewFakeRuntimeService(),
		img:  critest.NewFakeImageService(),
		clk:  clocktesting.NewFakeClock(time.Now()),
		root: t.TempDir(),
	}
	f.img.SetFakeImages([]string{"busybox:1.36"})
	return f
}

// callsSince returns the runtime's calls after mark.
func (f *runtimeFakes) callsSince(mark int) []string { return f.rt.GetCalls()[mark:] }

func (f *runtimeFakes) mark() int { return len(f.rt.GetCalls()) }

// podObjects lists the IDs of the sandboxes and containers the runtime
// holds for a pod UID, and how many containers run.
func (f *runtimeFakes) podObjects(uid string) (sandboxes, containers []string, running int) {
	f.rt.Lock()
	defer f.rt.Unlock()
	for id, s := range f.rt.Sandboxes {
		if s.Labels[labels.PodUID] == uid {
			sandboxes = append(sandboxes, id)
		}
	}
	for id, c := range f.rt.Containers {
		if c.Labels[labels.PodUID] == uid {
			containers = append(containers, id)
			if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				running++
			}
		}
	}
	sort.Strings(sandboxes)
	sort.Strings(containers)
	return sandboxes, containers, running
}

// running agent under test.
type runningAgent struct {
	a     *Agent
	snaps chan source.Snapshot
	stop  func()
}

func (f *runtimeFakes) start(t *testing.T) *runningAgent {
	t.Helper()
	return f.startWith(t, f.rt)
}

// startWith runs an agent on rt, which wraps f.rt.
func (f *runtimeFakes) startWith(t *testing.T, rt internalapi.RuntimeService) *runningAgent {
	t.Helper()
	return f.startConfigured(t, rt, func(*Config) {})
}

// startConfigured runs an agent on rt with the suite's configuration as
// changed by edit.
func (f *runtimeFakes) startConfigured(t *testing.T, rt internalapi.RuntimeService, edit func(*Config)) *runningAgent {
	t.Helper()
	root := f.root
	snaps := make(chan source.Snapshot)
	cfg := Config{
		Snapshots: snaps,
		NodeName:  "node1",
		Root:      root,
		PodConfig: podconfig.Options{PodLogRoot: filepath.Join(root, "logs"), NodeName: "node1"},
		Runtime:   rt,
		Images:    f.img,
		Clock:     f.clk,
	}
	edit(&cfg)
	a := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return after its context ended")
		}
	}
	t.Cleanup(stop)
	return &runningAgent{a: a, snaps: snaps, stop: stop}
}

// send hands the agent a snapshot and returns once the loop has applied
// it: the second send only completes after the loop is back in its select.
func (r *runningAgent) send(t *testing.T, snap source.Snapshot) {
	t.Helper()
	for i := 0; i < 2; i++ {
		select {
		case r.snaps <- snap:
		case <-time.After(10 * time.Second):
			t.Fatal("the agent does not take snapshots")
		}
	}
}

// waitFor polls cond until it holds or a real-time deadline passes. It
// only waits for goroutines; no timing is asserted.
func waitFor(t *testing.T, what string, cond func() bool, describe ...func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			for _, d := range describe {
				what += ": " + d()
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// idle waits until no worker is busy with the pods.
func (r *runningAgent) idle(t *testing.T, pods ...*corev1.Pod) {
	t.Helper()
	waitFor(t, "idle pod workers", func() bool {
		for _, p := range pods {
			if r.a.workers.Busy(string(p.UID)) {
				return false
			}
		}
		return true
	})
}

// waitRunning waits until the pod's containers all run and its status says
// so.
func (r *runningAgent) waitRunning(t *testing.T, f *runtimeFakes, pod *corev1.Pod) {
	t.Helper()
	waitFor(t, "pod "+pod.Name+" running", func() bool {
		sbs, _, running := f.podObjects(string(pod.UID))
		if len(sbs) != 1 || running != len(pod.Spec.Containers) {
			return false
		}
		st, ok := r.a.Store().Get(pod.UID)
		if !ok || len(st.Status.ContainerStatuses) != len(pod.Spec.Containers) {
			return false
		}
		for _, c := range st.Status.ContainerStatuses {
			if c.State.Running == nil {
				return false
			}
		}
		return true
	}, func() string {
		sbs, cs, running := f.podObjects(string(pod.UID))
		st, ok := r.a.Store().Get(pod.UID)
		var status any
		if ok {
			status = st.Status
		}
		return fmt.Sprintf("sandboxes %v containers %v running %d; stored %v status %+v", sbs, cs, running, ok, status)
	})
	r.idle(t, pod)
}

func mutatingCalls(calls []string) []string {
	var out []string
	for _, c := range calls {
		if mutating[c] {
			out = append(out, c)
		}
	}
	return out
}

func count(calls []string, name string) int {
	n := 0
	for _, c := range calls {
		if c == name {
			n++
		}
	}
	return n
}

func TestAgentRunsUpdatesAndRemovesPods(t *testing.T) {
	f := newRuntimeFakes(t)
	r := f.start(t)
	snap := only(loadPods(t, twoPods), "web")
	web := podNamed(t, snap, "web")

	r.send(t, snap)
	r.waitRunning(t, f, web)
	st, _ := r.a.Store().Get(web.UID)
	if st.Status.Phase != corev1.PodRunning || st.Status.PodIP != critest.FakePodSandboxIPs[0] {
		t.Errorf("status phase %s podIP %q, want Running %s", st.Status.Phase, st.Status.PodIP, critest.FakePodSandboxIPs[0])
	}
	calls := f.callsSince(0)
	if count(calls, "RunPodSandbox") != 1 || count(calls, "CreateContainer") != 1 || count(calls, "StartContainer") != 1 {
		t.Errorf("calls to run the pod: %v", mutatingCalls(calls))
	}
	podDir := filepath.Join(r.a.cfg.Root, "pods", string(web.UID))
	if _, err := os.Stat(podDir); err != nil {
		t.Errorf("the pod's volume dir: %v", err)
	}

	// The same snapshot again: nothing changes.
	mark := f.mark()
	r.send(t, snap)
	r.idle(t, web)
	if got := mutatingCalls(f.callsSince(mark)); len(got) != 0 {
		t.Errorf("an identical snapshot made %v", got)
	}

	// A relist and a resync of a steady pod change nothing either.
	mark = f.mark()
	f.clk.Step(10 * time.Second)
	// One relist (ListPods) and one resync (ObservePod before and after
	// SyncPod) list sandboxes three times.
	waitFor(t, "a relist and a resync", func() bool { return count(f.callsSince(mark), "ListPodSandbox") >= 3 })
	r.idle(t, web)
	if got := mutatingCalls(f.callsSince(mark)); len(got) != 0 {
		t.Errorf("relist and resync of a steady pod made %v", got)
	}

	// The pod leaves the snapshot: stopped and removed everywhere.
	r.send(t, only(snap))
	waitFor(t, "the pod removed from the runtime and the store", func() bool {
		sbs, cs, _ := f.podObjects(string(web.UID))
		_, inStore := r.a.Store().Get(web.UID)
		return len(sbs) == 0 && len(cs) == 0 && !inStore
	})
	r.idle(t, web)
	calls = f.callsSince(mark)
	for _, want := range []string{"StopContainer", "StopPodSandbox", "RemoveContainer", "RemovePodSandbox"} {
		if count(calls, want) != 1 {
			t.Errorf("removal made %d %s calls, want 1: %v", count(calls, want), want, mutatingCalls(calls))
		}
	}
	if _, err := os.Stat(podDir); !os.IsNotExist(err) {
		t.Errorf("the pod's volume dir is still there: %v", err)
	}
}

func TestAgentAdoptsAndCleansUpAfterRestart(t *testing.T) {
	f := newRuntimeFakes(t)
	snap := loadPods(t, twoPods)
	web, db := podNamed(t, snap, "web"), podNamed(t, snap, "db")

	first := f.start(t)
	first.send(t, snap)
	first.waitRunning(t, f, web)
	first.waitRunning(t, f, db)
	first.stop()
	_, dbContainers, _ := f.podObjects(string(db.UID))

	// A new agent whose first snapshot only has db.
	mark := f.mark()
	second := f.start(t)
	second.send(t, only(snap, "db"))
	waitFor(t, "web removed from the runtime", func() bool {
		sbs, cs, _ := f.podObjects(string(web.UID))
		return len(sbs) == 0 && len(cs) == 0
	})
	second.waitRunning(t, f, db)
	second.idle(t, web, db)

	calls := f.callsSince(mark)
	for _, bad := range []string{"RunPodSandbox", "CreateContainer", "StartContainer"} {
		if n := count(calls, bad); n != 0 {
			t.Errorf("after the restart: %d %s calls, want none (db is adopted): %v", n, bad, mutatingCalls(calls))
		}
	}
	if n := count(calls, "StopContainer"); n != 1 {
		t.Errorf("after the restart: %d StopContainer calls, want 1 (web's): %v", n, mutatingCalls(calls))
	}
	if _, cs, running := f.podObjects(string(db.UID)); !equalStrings(cs, dbContainers) || running != 1 {
		t.Errorf("db containers %v (running %d), want the same %v still running", cs, running, dbContainers)
	}
	if _, ok := second.a.Store().Get(web.UID); ok {
		t.Errorf("web is in the new agent's store")
	}
}

// A pod the runtime lost while the agent was down has nothing to sync: the
// housekeeping finds it by its directory and removes the directory and the
// logs, and leaves the logs of pods that are not the agent's.
func TestAgentHousekeepingRemovesWhatAGonePodLeft(t *testing.T) {
	f := newRuntimeFakes(t)
	snap := only(loadPods(t, twoPods), "web")
	web := podNamed(t, snap, "web")
	first := f.start(t)
	first.send(t, snap)
	first.waitRunning(t, f, web)
	first.stop()

	podDir := filepath.Join(f.root, "pods", string(web.UID))
	if _, err := os.Stat(podDir); err != nil {
		t.Fatalf("the running pod has no directory: %v", err)
	}
	logs := filepath.Join(f.root, "logs")
	webLogs := filepath.Join(logs, "default_web_"+string(web.UID))
	strangerLogs := filepath.Join(logs, "default_web_"+string(web.UID)+"0")
	for _, dir := range []string{webLogs, strangerLogs} {
		if err := os.MkdirAll(filepath.Join(dir, "app"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "app", "0.log"), []byte("hi\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.rt.Lock()
	for id, c := range f.rt.Containers {
		if c.Labels[labels.PodUID] == string(web.UID) {
			delete(f.rt.Containers, id)
		}
	}
	for id, s := range f.rt.Sandboxes {
		if s.Labels[labels.PodUID] == string(web.UID) {
			delete(f.rt.Sandboxes, id)
		}
	}
	f.rt.Unlock()

	second := f.start(t)
	second.send(t, only(snap))
	gone := func(p string) bool { _, err := os.Stat(p); return os.IsNotExist(err) }
	waitFor(t, "the gone pod's directory and logs removed", func() bool {
		f.clk.Step(2 * time.Second)
		return gone(podDir) && gone(webLogs)
	})
	if gone(strangerLogs) {
		t.Errorf("the logs of a pod that is not the agent's (%s) were removed", strangerLogs)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// gatedRuntime blocks a pod worker's second ObservePod of a sync (the one
// after SyncPod) once armed, so that a test can change the runtime and
// relist while the worker is busy.
type gatedRuntime struct {
	*critest.FakeRuntimeService

	mu       sync.Mutex
	armed    bool
	podLists int
	relists  int
	blocked  chan struct{}
	release  chan struct{}
}

func (g *gatedRuntime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	g.mu.Lock()
	block := false
	if filter.GetLabelSelector()[labels.PodUID] == "" {
		g.relists++
	} else if g.armed {
		g.podLists++
		if g.podLists == 2 {
			g.armed = false
			block = true
		}
	}
	g.mu.Unlock()
	if block {
		g.blocked <- struct{}{}
		<-g.release
	}
	return g.FakeRuntimeService.ListPodSandbox(ctx, filter)
}

func (g *gatedRuntime) relistCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.relists
}

// A container that exits while its pod's worker is busy, seen by a relist
// during that sync, must still get the pod synced again.
func TestAgentRelistDuringSyncIsNotLost(t *testing.T) {
	f := newRuntimeFakes(t)
	g := &gatedRuntime{FakeRuntimeService: f.rt, blocked: make(chan struct{}), release: make(chan struct{})}
	r := f.startWith(t, g)
	snap := only(loadPods(t, twoPods), "web")
	web := podNamed(t, snap, "web")
	r.send(t, snap)
	r.waitRunning(t, f, web)
	_, containers, _ := f.podObjects(string(web.UID))

	// New data syncs every pod; its worker stops after SyncPod.
	g.mu.Lock()
	g.armed = true
	g.mu.Unlock()
	withData := snap
	withData.ConfigMaps = map[string]*corev1.ConfigMap{"default/x": {Data: map[string]string{"k": "v"}}}
	r.send(t, withData)
	select {
	case <-g.blocked:
	case <-time.After(10 * time.Second):
		t.Fatal("the pod was not synced after new data")
	}

	// The container exits now, and a relist sees it while the worker is
	// busy.
	f.rt.Lock()
	c := f.rt.Containers[containers[0]]
	c.State = runtimeapi.ContainerState_CONTAINER_EXITED
	c.ExitCode = 1
	c.FinishedAt = f.clk.Now().UnixNano()
	f.rt.Unlock()
	relists := g.relistCount()
	f.clk.Step(time.Second)
	waitFor(t, "a relist", func() bool { return g.relistCount() > relists })
	r.send(t, withData) // the relist is done
	close(g.release)
	r.idle(t, web)

	// Another relist (nothing changed since the last) and the pod must have
	// been restarted by now.
	mark := f.mark()
	relists = g.relistCount()
	f.clk.Step(time.Second)
	waitFor(t, "a relist", func() bool { return g.relistCount() > relists })
	r.send(t, withData)
	r.idle(t, web)
	if n := count(f.callsSince(0), "CreateContainer"); n != 2 {
		t.Errorf("CreateContainer calls = %d, want 2: the exit seen by a relist during a sync was dropped (calls since: %v)",
			n, mutatingCalls(f.callsSince(mark)))
	}
}

// exitContainer makes the pod's only running container exit with code at
// the fake clock's now, and returns its ID.
func (f *runtimeFakes) exitContainer(t *testing.T, uid string, code int32) string {
	t.Helper()
	f.rt.Lock()
	defer f.rt.Unlock()
	for id, c := range f.rt.Containers {
		if c.Labels[labels.PodUID] == uid && c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			c.State = runtimeapi.ContainerState_CONTAINER_EXITED
			c.ExitCode = code
			c.Reason = "Error"
			c.FinishedAt = f.clk.Now().UnixNano()
			return id
		}
	}
	t.Fatalf("no running container of pod %s", uid)
	return ""
}

func containerStatus(r *runningAgent, pod *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	st, ok := r.a.Store().Get(pod.UID)
	if !ok {
		return corev1.ContainerStatus{}, false
	}
	for _, c := range st.Status.ContainerStatuses {
		if c.Name == name {
			return c, true
		}
	}
	return corev1.ContainerStatus{}, false
}

func TestAgentCrashLoop(t *testing.T) {
	f := newRuntimeFakes(t)
	r := f.start(t)
	snap := only(loadPods(t, twoPods), "web")
	web := podNamed(t, snap, "web")
	uid := string(web.UID)
	r.send(t, snap)
	r.waitRunning(t, f, web)

	// The first crash restarts at once, on the next relist.
	f.exitContainer(t, uid, 1)
	f.clk.Step(time.Second)
	waitFor(t, "the first restart", func() bool {
		c, ok := containerStatus(r, web, "app")
		return ok && c.RestartCount == 1 && c.State.Running != nil
	})
	r.idle(t, web)

	// The second waits 10s from its exit in CrashLoopBackOff.
	f.exitContainer(t, uid, 1)
	f.clk.Step(time.Second)
	waitFor(t, "CrashLoopBackOff", func() bool {
		c, ok := containerStatus(r, web, "app")
		return ok && c.State.Waiting != nil && c.State.Waiting.Reason == "CrashLoopBackOff"
	}, func() string {
		c, _ := containerStatus(r, web, "app")
		return fmt.Sprintf("%+v", c)
	})
	r.idle(t, web)
	c, _ := containerStatus(r, web, "app")
	if c.RestartCount != 1 || c.LastTerminationState.Terminated == nil || c.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("status in backoff = %+v, want restart count 1 and the last exit code 1", c)
	}
	if n := count(f.callsSince(0), "CreateContainer"); n != 2 {
		t.Errorf("CreateContainer calls in backoff = %d, want 2", n)
	}

	// Past the backoff the pod's requeue (or a resync) restarts it.
	f.clk.Step(10 * time.Second)
	waitFor(t, "the restart after the backoff", func() bool {
		c, ok := containerStatus(r, web, "app")
		return ok && c.RestartCount == 2 && c.State.Running != nil
	})
	r.idle(t, web)
	if n := count(f.callsSince(0), "CreateContainer"); n != 3 {
		t.Errorf("CreateContainer calls = %d, want 3", n)
	}
}

func TestAgentManifestEditReplacesContainer(t *testing.T) {
	f := newRuntimeFakes(t)
	r := f.start(t)
	snap := only(loadPods(t, twoPods), "web")
	web := podNamed(t, snap, "web")
	r.send(t, snap)
	r.waitRunning(t, f, web)
	_, before, _ := f.podObjects(string(web.UID))

	edited := web.DeepCopy()
	edited.Spec.Containers[0].Command = []string{"sleep", "7200"}
	snap2 := snap
	snap2.Pods = []*corev1.Pod{edited}
	mark := f.mark()
	r.send(t, snap2)
	waitFor(t, "the edited container running", func() bool {
		c, ok := containerStatus(r, edited, "app")
		return ok && c.RestartCount == 1 && c.State.Running != nil
	})
	r.idle(t, edited)
	calls := mutatingCalls(f.callsSince(mark))
	if want := []string{"StopContainer", "CreateContainer", "StartContainer"}; !equalStrings(calls, want) {
		t.Errorf("calls after the edit = %v, want %v", calls, want)
	}
	sbs, after, running := f.podObjects(string(web.UID))
	if len(sbs) != 1 || running != 1 || len(after) != len(before)+1 {
		t.Errorf("after the edit: sandboxes %v containers %v running %d, want the same sandbox and one live container", sbs, after, running)
	}
}

func TestAgentImagePullBackOff(t *testing.T) {
	f := newRuntimeFakes(t)
	f.img.SetFakeImages(nil)
	f.img.InjectError("PullImage", errors.New("registry down"))
	f.img.InjectError("PullImage", errors.New("registry down"))
	r := f.start(t)
	snap := only(loadPods(t, twoPods), "web")
	web := podNamed(t, snap, "web")
	waiting := func(reason string) func() bool {
		return func() bool {
			c, ok := containerStatus(r, web, "app")
			return ok && c.State.Waiting != nil && c.State.Waiting.Reason == reason
		}
	}
	pulls := func() int {
		f.img.Lock()
		defer f.img.Unlock()
		return count(f.img.Called, "PullImage")
	}

	r.send(t, snap)
	// A relist may sync the pod again at once, which finds the pull in
	// backoff already: either reason shows the failed pull.
	waitFor(t, "ErrImagePull", func() bool { return waiting("ErrImagePull")() || waiting("ImagePullBackOff")() })
	r.idle(t, web)
	if n := pulls(); n != 1 {
		t.Fatalf("PullImage calls = %d, want 1", n)
	}

	// The error requeue (1s) finds the pull in backoff.
	f.clk.Step(time.Second)
	waitFor(t, "ImagePullBackOff", waiting("ImagePullBackOff"))
	r.idle(t, web)
	if n := pulls(); n != 1 {
		t.Fatalf("PullImage calls in backoff = %d, want 1", n)
	}

	// Past 10s: pulls again (and fails, 20s now), then past 20s it runs.
	f.clk.Step(10 * time.Second)
	waitFor(t, "a second pull", func() bool { return pulls() == 2 })
	r.idle(t, web)
	f.clk.Step(21 * time.Second)
	r.waitRunning(t, f, web)
	if n := pulls(); n != 3 {
		t.Errorf("PullImage calls = %d, want 3", n)
	}
}

const livenessPod = `apiVersion: v1
kind: Pod
metadata:
  name: live
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
    livenessProbe:
      exec:
        command: [cat, /tmp/healthy]
      periodSeconds: 1
      failureThreshold: 1
`

func TestAgentLivenessFailureRestartsContainer(t *testing.T) {
	f := newRuntimeFakes(t)
	r := f.start(t)
	snap := loadPods(t, livenessPod)
	pod := podNamed(t, snap, "live")
	r.send(t, snap)
	r.waitRunning(t, f, pod)
	_, before, _ := f.podObjects(string(pod.UID))

	// The next probe fails; later ones pass.
	f.rt.InjectError("ExecSync", errors.New("cat: can't open '/tmp/healthy'"))
	waitFor(t, "a restart after the liveness failure", func() bool {
		f.clk.Step(time.Second) // the probe's period
		c, ok := containerStatus(r, pod, "app")
		return ok && c.RestartCount == 1 && c.State.Running != nil
	})
	r.idle(t, pod)
	sbs, after, running := f.podObjects(string(pod.UID))
	if len(sbs) != 1 || running != 1 || len(after) != len(before)+1 {
		t.Errorf("after the restart: sandboxes %v containers %v running %d", sbs, after, running)
	}
	if n := count(f.callsSince(0), "RunPodSandbox"); n != 1 {
		t.Errorf("RunPodSandbox calls = %d, want 1 (a liveness failure restarts the container only)", n)
	}
}

const preStopPod = `apiVersion: v1
kind: Pod
metadata:
  name: hooked
spec:
  terminationGracePeriodSeconds: 12
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
    lifecycle:
      preStop:
        exec:
          command: [sh, -c, "kill -TERM 1"]
`

func TestAgentRemovedManifestRunsPreStop(t *testing.T) {
	f := newRuntimeFakes(t)
	r := f.start(t)
	snap := loadPods(t, preStopPod)
	pod := podNamed(t, snap, "hooked")
	r.send(t, snap)
	r.waitRunning(t, f, pod)

	mark := f.mark()
	r.send(t, only(snap))
	waitFor(t, "the pod removed", func() bool {
		sbs, cs, _ := f.podObjects(string(pod.UID))
		return len(sbs) == 0 && len(cs) == 0
	})
	r.idle(t, pod)
	calls := mutatingCalls(f.callsSince(mark))
	want := []string{"ExecSync", "StopContainer", "StopPodSandbox", "RemoveContainer", "RemovePodSandbox"}
	if !equalStrings(calls, want) {
		t.Errorf("calls = %v, want %v", calls, want)
	}
}

// Two agents on one runtime (`crib agent` and a `crib run` beside it) each
// keep to their own pods: neither takes the other's for strays.
func TestAgentsWithOwnersShareARuntime(t *testing.T) {
	f := newRuntimeFakes(t)
	node := f.start(t)
	run := f.startConfigured(t, f.rt, func(c *Config) {
		c.PodConfig.Owner = "run-1"
		c.Root = filepath.Join(c.Root, "runs", "run-1")
	})
	snap := loadPods(t, twoPods)
	web, db := podNamed(t, snap, "web"), podNamed(t, snap, "db")

	node.send(t, only(snap, "web"))
	node.waitRunning(t, f, web)
	run.send(t, only(snap, "db"))
	run.waitRunning(t, f, db)

	// Relists, resyncs and housekeeping of both agents.
	mark := f.mark()
	f.clk.Step(10 * time.Second)
	waitFor(t, "relists", func() bool { return count(f.callsSince(mark), "ListPodSandbox") >= 4 })
	node.idle(t, web)
	run.idle(t, db)
	if got := mutatingCalls(f.callsSince(mark)); len(got) != 0 {
		t.Fatalf("the agents touched pods: %v", got)
	}
	if _, ok := node.a.Store().Get(db.UID); ok {
		t.Error("the node's agent lists the other agent's pod")
	}

	// The run ends: its pod goes, the node's stays.
	run.send(t, only(snap))
	waitFor(t, "db removed", func() bool {
		sbs, cs, _ := f.podObjects(string(db.UID))
		return len(sbs) == 0 && len(cs) == 0
	})
	node.idle(t, web)
	if _, _, running := f.podObjects(string(web.UID)); running != 1 {
		t.Errorf("the node's pod has %d running containers, want 1", running)
	}
}

// TestAgentSyncBeforeFirstSnapshotKeepsPods: after a restart, a runtime
// event can name a pod before the manifests are read; the agent must not
// tear that pod down as unwanted.
func TestAgentSyncBeforeFirstSnapshotKeepsPods(t *testing.T) {
	f := newRuntimeFakes(t)
	snap := loadPods(t, twoPods)
	web := podNamed(t, snap, "web")

	first := f.start(t)
	first.send(t, snap)
	first.waitRunning(t, f, web)
	first.stop()

	mark := f.mark()
	watching := &eventsWatched{RuntimeService: f.rt, seen: make(chan struct{})}
	second := f.startWith(t, watching)
	select {
	case <-watching.seen: // the agent's parts are built
	case <-time.After(10 * time.Second):
		t.Fatal("the new agent does not watch the runtime's events")
	}
	// What an event does: a sync of the pod, before any snapshot.
	if d := second.a.syncPod(context.Background(), string(web.UID)); d <= 0 {
		t.Errorf("a sync before the first snapshot returned %v, want a requeue", d)
	}
	if n := count(f.callsSince(mark), "StopContainer") + count(f.callsSince(mark), "StopPodSandbox"); n != 0 {
		t.Errorf("a sync before the first snapshot stopped web: %v", mutatingCalls(f.callsSince(mark)))
	}
	second.send(t, snap)
	second.waitRunning(t, f, web)
	if n := count(f.callsSince(mark), "StopContainer"); n != 0 {
		t.Errorf("web was stopped after the restart: %v", mutatingCalls(f.callsSince(mark)))
	}
}

// eventsWatched tells when an agent starts watching the runtime's events.
type eventsWatched struct {
	internalapi.RuntimeService
	once sync.Once
	seen chan struct{}
}

func (e *eventsWatched) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, cb func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	e.once.Do(func() { close(e.seen) })
	return e.RuntimeService.GetContainerEvents(ctx, ch, cb)
}
