package integration

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// retainPods is how many pods TestNothingHeldAfterPodsRemoved makes per
// round: more than the goroutines the comparison lets go (retainSlack), so
// that one goroutine kept per pod fails it.
const (
	retainPods  = 20
	retainSlack = 5
)

// TestNothingHeldAfterPodsRemoved: once pods are removed, the daemon holds
// nothing of them: its pods and containers by state count zero and its
// goroutines come back to what they were idle (one kept per pod or
// container fails it), whether the pods are removed by the daemon that
// made them or by the next one, after a restart; nor do its threads grow
// with them. Each pod (of a shared PID namespace, with a pause) also had its
// stats, list and status read, and a container create that failed and was
// undone, and a GetContainerEvents stream watched it all.
func TestNothingHeldAfterPodsRemoved(t *testing.T) {
	testutil.RequiresRoot(t)
	t.Parallel()
	img := testutil.Busybox(t)
	// A fixed port: the same URL after the restart.
	metricsConfig, url := testutil.MetricsOnFreePort(t)
	d := testutil.StartDaemon(t, testutil.Options{Image: &img, ExtraConfig: metricsConfig})
	e := &env{t: t, d: d, img: img}

	// One round first, so that what the daemon makes once (pools, gRPC's
	// and the image store's state) is there when it is measured idle.
	e.retainRound(1)
	e.removeAllPods()
	idle := settledGoroutines(t, url, -1)
	idleThreads := testutil.Threads(t, d.Pid())

	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			e := &env{t: t, d: d, img: img}
			events, err := e.rt().GetContainerEvents(e.ctx(), &runtimeapi.GetEventsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			e.retainRound(retainPods)
			held := settledGoroutines(t, url, -1)
			if restart {
				d.Restart(t)
			}
			e.removeAllPods()
			if !restart {
				if _, err := events.Recv(); err != nil {
					t.Fatalf("GetContainerEvents: %v", err)
				}
			}
			got := settledGoroutines(t, url, idle+retainSlack)
			if got > idle+retainSlack {
				t.Errorf("%d goroutines after %d pods were removed, %d idle: kept per pod", got, retainPods, idle)
			}
			// The Go runtime never ends a thread it made: one per pod
			// (a wait for its pause, say) stays once the pods are gone.
			threads := testutil.Threads(t, d.Pid())
			if threads > idleThreads+retainSlack {
				t.Errorf("%d threads after %d pods were removed, %d idle: one per pod", threads, retainPods, idleThreads)
			}
			fams := testutil.Scrape(t, url)
			for _, name := range []string{"crib_sandboxes", "crib_containers"} {
				for _, m := range fams[name].GetMetric() {
					if v := m.GetGauge().GetValue(); v != 0 {
						t.Errorf("%s %v = %v after every pod was removed, want 0", name, m.GetLabel(), v)
					}
				}
			}
			t.Logf("goroutines idle %d, with %d pods %d, after they were removed %d; threads idle %d, after %d; resident %.1f MiB",
				idle, retainPods, held, got, idleThreads, threads, fams["process_resident_memory_bytes"].GetMetric()[0].GetGauge().GetValue()/(1<<20))
		})
	}
}

// retainRound runs n host-network pods of a sleeping container each,
// reads what a kubelet reads of them, and fails a container create in
// each.
func (e *env) retainRound(n int) {
	e.t.Helper()
	for i := range n {
		name := fmt.Sprintf("retain-%d-%d", time.Now().UnixNano(), i)
		pod := e.podConfig(name)
		pod.Linux.SecurityContext.NamespaceOptions.Network = runtimeapi.NamespaceMode_NODE
		// A shared PID namespace: the pod has a pause the daemon waits for.
		pod.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_POD
		podID := e.runPod(pod)
		ctr := e.run(podID, pod, e.ctrConfig("sleeper", "sleep", "3600"))
		bad := e.ctrConfig("missing", "true")
		bad.Image = &runtimeapi.ImageSpec{Image: "127.0.0.1:1/no-such-image:1"}
		if _, err := e.rt().CreateContainer(e.ctx(), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: bad, SandboxConfig: pod}); status.Code(err) == codes.OK {
			e.t.Fatal("CreateContainer of a missing image succeeded")
		}
		if _, err := e.rt().PodSandboxStats(e.ctx(), &runtimeapi.PodSandboxStatsRequest{PodSandboxId: podID}); err != nil {
			e.t.Fatalf("PodSandboxStats: %v", err)
		}
		if _, err := e.rt().ContainerStats(e.ctx(), &runtimeapi.ContainerStatsRequest{ContainerId: ctr}); err != nil {
			e.t.Fatalf("ContainerStats: %v", err)
		}
		e.status(ctr)
	}
	if _, err := e.rt().ListContainers(e.ctx(), &runtimeapi.ListContainersRequest{}); err != nil {
		e.t.Fatalf("ListContainers: %v", err)
	}
	if _, err := e.rt().ListPodSandboxStats(e.ctx(), &runtimeapi.ListPodSandboxStatsRequest{Filter: &runtimeapi.PodSandboxStatsFilter{}}); err != nil {
		e.t.Fatalf("ListPodSandboxStats: %v", err)
	}
}

// removeAllPods stops and removes every pod, as the kubelet does: the
// containers first, then the sandbox.
func (e *env) removeAllPods() {
	e.t.Helper()
	pods, err := e.rt().ListPodSandbox(e.ctx(), &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, p := range pods.Items {
		ctrs, err := e.rt().ListContainers(e.ctx(), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: p.Id}})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, c := range ctrs.Containers {
			if _, err := e.rt().StopContainer(e.ctx(), &runtimeapi.StopContainerRequest{ContainerId: c.Id}); err != nil {
				e.t.Fatalf("StopContainer: %v", err)
			}
			if _, err := e.rt().RemoveContainer(e.ctx(), &runtimeapi.RemoveContainerRequest{ContainerId: c.Id}); err != nil {
				e.t.Fatalf("RemoveContainer: %v", err)
			}
		}
		if _, err := e.rt().StopPodSandbox(e.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			e.t.Fatalf("StopPodSandbox: %v", err)
		}
		if _, err := e.rt().RemovePodSandbox(e.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			e.t.Fatalf("RemovePodSandbox: %v", err)
		}
	}
}

// settledGoroutines is the daemon's goroutine count once it stops
// falling: goroutines that end a removal in the background (the monitors'
// reapers) are let finish. It returns as soon as the count is at most
// want (want < 0: wait for it to settle), or after half a minute.
func settledGoroutines(t *testing.T, url string, want int) int {
	t.Helper()
	read := func() int {
		return int(testutil.Scrape(t, url)["go_goroutines"].GetMetric()[0].GetGauge().GetValue())
	}
	last, same := read(), 0
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if want >= 0 && last <= want {
			return last
		}
		time.Sleep(200 * time.Millisecond)
		n := read()
		if n == last {
			same++
			if want < 0 && same >= 5 {
				return n
			}
		} else {
			same = 0
		}
		last = n
	}
	return last
}
