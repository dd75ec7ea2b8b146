package kuberuntime

import (
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/plan"
)

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func podLabels(uid string) map[string]string {
	return map[string]string{
		labels.PodName: "pod-" + uid, labels.PodNamespace: "ns", labels.PodUID: uid,
		labels.ManagedBy: labels.ManagedByValue,
	}
}

// fakeSandbox is a sandbox of pod uid created at epoch+at.
func fakeSandbox(uid, id string, at time.Duration, ready bool) *critest.FakePodSandbox {
	st := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if ready {
		st = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return &critest.FakePodSandbox{PodSandboxStatus: runtimeapi.PodSandboxStatus{
		Id:        id,
		Metadata:  &runtimeapi.PodSandboxMetadata{Name: "pod-" + uid, Namespace: "ns", Uid: uid},
		State:     st,
		CreatedAt: epoch.Add(at).UnixNano(),
		Network:   &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.1"},
		Labels:    podLabels(uid),
	}}
}

// fakeContainer is a container of pod uid named name in sandbox sb,
// created at epoch+at.
func fakeContainer(uid, sb, id, name string, attempt uint32, at time.Duration, state runtimeapi.ContainerState) *critest.FakeContainer {
	l := podLabels(uid)
	l[labels.ContainerName] = name
	c := &critest.FakeContainer{
		SandboxID: sb,
		ContainerStatus: runtimeapi.ContainerStatus{
			Id:          id,
			Metadata:    &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt},
			State:       state,
			CreatedAt:   epoch.Add(at).UnixNano(),
			Image:       &runtimeapi.ImageSpec{Image: "busybox:1.36"},
			Labels:      l,
			Annotations: map[string]string{labels.ContainerType: labels.TypeApp, labels.ContainerHash: "h"},
		},
	}
	if state == runtimeapi.ContainerState_CONTAINER_EXITED {
		c.ExitCode = 1
		c.FinishedAt = epoch.Add(at + time.Second).UnixNano()
	}
	return c
}

const (
	running = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited  = runtimeapi.ContainerState_CONTAINER_EXITED
)

func ids[T any](xs []T, id func(T) string) []string {
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		out = append(out, id(x))
	}
	return out
}

func containerIDsOf(o plan.Observed) []string {
	return ids(o.Containers, func(c plan.Container) string { return c.ID })
}

func sandboxIDsOf(o plan.Observed) []string {
	return ids(o.Sandboxes, func(s plan.Sandbox) string { return s.ID })
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestCollectGarbage(t *testing.T) {
	e := newEnv(t)
	e.rt.SetFakeSandboxes([]*critest.FakePodSandbox{
		fakeSandbox("u", "sb-oldest", 0, false),          // not ready, empty: removed
		fakeSandbox("u", "sb-old", 1*time.Minute, false), // not ready, only exited containers: removed with them
		fakeSandbox("u", "sb-keep", 2*time.Minute, true), // older but still ready: kept
		fakeSandbox("u", "sb-new", 3*time.Minute, true),
	})
	m := time.Minute
	e.rt.SetFakeContainers([]*critest.FakeContainer{
		fakeContainer("u", "sb-old", "old-app-0", "app", 0, 1*m+1, exited),
		fakeContainer("u", "sb-new", "app-1", "app", 1, 3*m+1, exited),
		fakeContainer("u", "sb-new", "app-2", "app", 2, 3*m+2, exited),
		fakeContainer("u", "sb-new", "app-3", "app", 3, 3*m+3, exited),
		fakeContainer("u", "sb-new", "app-4", "app", 4, 3*m+4, exited),
		fakeContainer("u", "sb-new", "app-5", "app", 5, 3*m+5, running),
		fakeContainer("u", "sb-new", "side-0", "side", 0, 3*m+6, exited),
		fakeContainer("u", "sb-new", "side-1", "side", 1, 3*m+7, exited),
	})
	pr, err := e.m.ObservePod(e.ctx, "u", nil)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := e.m.CollectGarbage(e.ctx, pr)
	if err != nil {
		t.Fatalf("CollectGarbage: %v", err)
	}
	wantContainers := []string{"side-1", "side-0", "app-5", "app-4"} // newest first
	if got := containerIDsOf(obs); !cmp.Equal(got, wantContainers) {
		t.Errorf("kept containers = %v, want %v", got, wantContainers)
	}
	wantSandboxes := []string{"sb-new", "sb-keep"}
	if got := sandboxIDsOf(obs); !cmp.Equal(got, wantSandboxes) {
		t.Errorf("kept sandboxes = %v, want %v", got, wantSandboxes)
	}
	// The runtime agrees with the returned observation.
	if got, want := keys(e.rt.allContainerIDs()), []string{"app-4", "app-5", "side-0", "side-1"}; !cmp.Equal(got, want) {
		t.Errorf("runtime containers = %v, want %v", got, want)
	}
	if got, want := keys(e.rt.allSandboxIDs()), []string{"sb-keep", "sb-new"}; !cmp.Equal(got, want) {
		t.Errorf("runtime sandboxes = %v, want %v", got, want)
	}

	// A second collection finds nothing to do.
	mark := e.log.len()
	pr, err = e.m.ObservePod(e.ctx, "u", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.CollectGarbage(e.ctx, pr); err != nil {
		t.Fatal(err)
	}
	if got := withPrefix(e.log.since(mark), "Remove"); len(got) != 0 {
		t.Errorf("second collection removed %v", got)
	}
}

func TestCollectGarbageKeepsRunningContainerOfOldSandbox(t *testing.T) {
	e := newEnv(t)
	e.rt.SetFakeSandboxes([]*critest.FakePodSandbox{
		fakeSandbox("u", "sb-old", 0, false),
		fakeSandbox("u", "sb-new", time.Minute, true),
	})
	e.rt.SetFakeContainers([]*critest.FakeContainer{
		// A live container in a not-ready sandbox is the plan's business
		// (kill), not garbage.
		fakeContainer("u", "sb-old", "stray", "app", 0, 1, running),
	})
	pr, err := e.m.ObservePod(e.ctx, "u", nil)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := e.m.CollectGarbage(e.ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	if got := containerIDsOf(obs); !cmp.Equal(got, []string{"stray"}) {
		t.Errorf("kept containers = %v, want [stray]", got)
	}
	if got := sandboxIDsOf(obs); !cmp.Equal(got, []string{"sb-new", "sb-old"}) {
		t.Errorf("kept sandboxes = %v, want the old one too while it holds a container", got)
	}
}

func TestListPodsGroupsByUIDAndIgnoresUnmanaged(t *testing.T) {
	e := newEnv(t)
	foreignSandbox := fakeSandbox("x", "sb-foreign", 0, true)
	delete(foreignSandbox.Labels, labels.ManagedBy)
	foreign := fakeContainer("a", "sb-a", "foreign", "other", 0, 3, running)
	delete(foreign.Labels, labels.ManagedBy)
	e.rt.SetFakeSandboxes([]*critest.FakePodSandbox{
		fakeSandbox("a", "sb-a", 0, true),
		fakeSandbox("b", "sb-b", 0, true),
		foreignSandbox,
	})
	e.rt.SetFakeContainers([]*critest.FakeContainer{
		fakeContainer("a", "sb-a", "a-app", "app", 0, 1, running),
		fakeContainer("a", "sb-a", "a-side", "side", 0, 2, exited),
		fakeContainer("b", "sb-b", "b-app", "app", 0, 1, running),
		foreign,
	})
	pods, err := e.m.ListPods(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for uid, p := range pods {
		got[uid] = append(sandboxIDsOf(p.Observed), containerIDsOf(p.Observed)...)
		if p.UID != uid || p.Name != "pod-"+uid || p.Namespace != "ns" {
			t.Errorf("pod %s identity = %q %s/%s", uid, p.UID, p.Namespace, p.Name)
		}
	}
	want := map[string][]string{
		"a": {"sb-a", "a-side", "a-app"},
		"b": {"sb-b", "b-app"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListPods (-want +got):\n%s", diff)
	}
	a := pods["a"].Observed
	if a.Sandboxes[0].State != plan.SandboxReady || a.Sandboxes[0].IP != "10.0.0.1" {
		t.Errorf("sandbox a = %+v, want ready with IP 10.0.0.1", a.Sandboxes[0])
	}
	side := a.Containers[0]
	if side.State != plan.ContainerExited || side.ExitCode != 1 || side.Name != "side" || side.Type != labels.TypeApp || side.Hash != "h" || side.FinishedAt.IsZero() {
		t.Errorf("container a-side = %+v", side)
	}
	if e.rt.statusCalls("foreign") != 0 {
		t.Errorf("read the status of an unmanaged container")
	}

	one, err := e.m.ObservePod(e.ctx, "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := append(sandboxIDsOf(one.Observed), containerIDsOf(one.Observed)...); !cmp.Equal(got, []string{"sb-b", "b-app"}) {
		t.Errorf("ObservePod(b) = %v", got)
	}
	none, err := e.m.ObservePod(e.ctx, "nobody", nil)
	if err != nil {
		t.Fatal(err)
	}
	if none.UID != "nobody" || len(none.Observed.Sandboxes)+len(none.Observed.Containers) != 0 {
		t.Errorf("ObservePod(nobody) = %+v, want empty with the UID", none)
	}
}

func TestListPodsCachesStatuses(t *testing.T) {
	e := newEnv(t)
	e.rt.SetFakeSandboxes([]*critest.FakePodSandbox{fakeSandbox("a", "sb-a", 0, true)})
	e.rt.SetFakeContainers([]*critest.FakeContainer{
		fakeContainer("a", "sb-a", "done-1", "init", 0, 1, exited),
		fakeContainer("a", "sb-a", "done-2", "app", 0, 2, exited),
		fakeContainer("a", "sb-a", "live", "app", 1, 3, running),
	})
	// Each read starts from the one before, as the agent's relists and
	// pod workers do.
	var last map[string]*PodRuntime
	for i := 0; i < 2; i++ {
		pods, err := e.m.ListPods(e.ctx, last)
		if err != nil {
			t.Fatal(err)
		}
		last = pods
	}
	a, err := e.m.ObservePod(e.ctx, "a", last["a"])
	if err != nil {
		t.Fatal(err)
	}
	last["a"] = a
	for _, id := range []string{"done-1", "done-2"} {
		if got := e.rt.statusCalls(id); got != 1 {
			t.Errorf("ContainerStatus(%s) over two lists and an observe = %d, want 1", id, got)
		}
	}
	// A ready sandbox's IPs never change: read once too.
	if got := e.rt.statusCalls("sb-a"); got != 1 {
		t.Errorf("PodSandboxStatus(sb-a) over two lists and an observe = %d, want 1", got)
	}

	// A cached running container that exits is read again, once.
	before := e.rt.statusCalls("live")
	e.rt.exit(t, "live", 137, epoch.Add(time.Hour))
	for i := 0; i < 2; i++ {
		pods, err := e.m.ListPods(e.ctx, last)
		if err != nil {
			t.Fatal(err)
		}
		last = pods
		for _, c := range pods["a"].Observed.Containers {
			if c.ID == "live" && (c.State != plan.ContainerExited || c.ExitCode != 137) {
				t.Fatalf("after exit, listed %+v", c)
			}
		}
	}
	if got := e.rt.statusCalls("live") - before; got != 1 {
		t.Errorf("ContainerStatus(live) after its exit = %d, want 1", got)
	}
}

func TestListPodsSkipsContainerRemovedMeanwhile(t *testing.T) {
	e := newEnv(t)
	e.rt.SetFakeSandboxes([]*critest.FakePodSandbox{fakeSandbox("a", "sb-a", 0, true)})
	e.rt.SetFakeContainers([]*critest.FakeContainer{
		fakeContainer("a", "sb-a", "gone", "app", 0, 1, exited),
	})
	e.rt.InjectError("ContainerStatus", status.Error(codes.NotFound, "no such container"))
	pods, err := e.m.ListPods(e.ctx, nil)
	if err != nil {
		t.Fatalf("ListPods with a container removed between list and status: %v", err)
	}
	if got := containerIDsOf(pods["a"].Observed); len(got) != 0 {
		t.Errorf("containers = %v, want none", got)
	}
}

func TestListPodsErrors(t *testing.T) {
	for _, method := range []string{"ListPodSandbox", "ListContainers", "ContainerStatus"} {
		t.Run(method, func(t *testing.T) {
			e := newEnv(t)
			e.rt.SetFakeSandboxes([]*critest.FakePodSandbox{fakeSandbox("a", "sb-a", 0, true)})
			e.rt.SetFakeContainers([]*critest.FakeContainer{fakeContainer("a", "sb-a", "c", "app", 0, 1, running)})
			e.rt.InjectError(method, status.Error(codes.Unavailable, "down"))
			if _, err := e.m.ListPods(e.ctx, nil); err == nil {
				t.Fatalf("ListPods with %s failing: no error", method)
			}
		})
	}
}
