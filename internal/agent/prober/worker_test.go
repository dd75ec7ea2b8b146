package prober

import (
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestInitialDelayCountsFromStartedAt(t *testing.T) {
	for _, tc := range []struct {
		name       string
		startedAgo time.Duration
		firstAfter time.Duration // clock advance before the first probe runs
	}{
		{"just started", 0, 5 * time.Second},
		{"started 3s ago", 3 * time.Second, 2 * time.Second},
		{"adopted long after the delay", time.Minute, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			pod := testPod("u1", corev1.Container{Name: "app", LivenessProbe: execProbe("live", 10, 5, 1, 3)})
			h.m.Sync(pod, "10.0.0.1", map[string]Running{"app": {ID: "c1", StartedAt: t0.Add(-tc.startedAgo)}})
			if tc.firstAfter == 0 {
				h.settle(1, 1)
				return
			}
			h.settle(0, 1)
			h.step(tc.firstAfter-time.Second, 0, 1)
			h.step(time.Second, 1, 1)
			h.step(10*time.Second, 2, 1)
		})
	}
}

func TestLivenessFailureThreshold(t *testing.T) {
	h := newHarness(t)
	h.exec.set("live", exitError{1})
	pod := testPod("u1", corev1.Container{Name: "app", LivenessProbe: execProbe("live", 10, 0, 1, 3)})
	h.m.Sync(pod, "10.0.0.1", map[string]Running{"app": running("c1")})

	h.settle(1, 1)
	if got := h.m.Result("c1", Liveness); got != Success {
		t.Fatalf("after 1 failure: liveness %v, want success (threshold 3)", got)
	}
	h.step(10*time.Second, 2, 1)
	if got := h.m.Result("c1", Liveness); got != Success {
		t.Fatalf("after 2 failures: liveness %v, want success", got)
	}
	if n := h.changesOf("u1"); n != 0 {
		t.Fatalf("OnChange called %d times before the threshold", n)
	}
	// The third failure reaches the threshold; the worker then waits for a
	// new container and exits.
	h.step(10*time.Second, 3, 0)
	if got := h.m.Result("c1", Liveness); got != Failure {
		t.Fatalf("after 3 failures: liveness %v, want failure", got)
	}
	if n := h.changesOf("u1"); n != 1 {
		t.Fatalf("OnChange called %d times, want 1", n)
	}
	if msg := h.m.Message("c1", Liveness); msg == "" {
		t.Error("no message for the failure")
	}
	eventually(t, "the worker to exit", func() bool { return h.m.live.Load() == 0 })
	h.step(time.Minute, 3, 0)
	if got := h.results[Liveness][Failure]; got != 3 {
		t.Errorf("OnResult saw %d liveness failures, want 3", got)
	}
}

func TestLivenessFailureCountResetsOnSuccess(t *testing.T) {
	h := newHarness(t)
	pod := testPod("u1", corev1.Container{Name: "app", LivenessProbe: execProbe("live", 1, 0, 1, 2)})
	h.exec.set("live", exitError{1})
	h.m.Sync(pod, "", map[string]Running{"app": running("c1")})
	h.settle(1, 1) // failure 1
	h.exec.set("live", nil)
	h.step(time.Second, 2, 1) // success resets the run
	h.exec.set("live", exitError{1})
	h.step(time.Second, 3, 1) // failure 1 again
	if got := h.m.Result("c1", Liveness); got != Success {
		t.Fatalf("liveness %v, want success: failures were not consecutive", got)
	}
	h.step(time.Second, 4, 0)
	if got := h.m.Result("c1", Liveness); got != Failure {
		t.Fatalf("liveness %v, want failure", got)
	}
}

func TestReadinessThresholds(t *testing.T) {
	h := newHarness(t)
	pod := testPod("u1", corev1.Container{Name: "app", ReadinessProbe: execProbe("ready", 10, 0, 2, 2)})
	h.m.Sync(pod, "10.0.0.1", map[string]Running{"app": running("c1")})
	if h.m.Ready("c1") || h.m.Result("c1", Readiness) != Failure {
		t.Fatal("a container with a readiness probe is ready before any probe")
	}
	if !h.m.Started("c1") {
		t.Fatal("a container without a startup probe is not started")
	}

	steps := []struct {
		fail      bool
		wantReady bool
		changes   int
	}{
		{false, false, 0}, // first probe runs at once: success 1 of 2
		{false, true, 1},
		{true, true, 1}, // failure 1 of 2
		{true, false, 2},
		{true, false, 2},
		{false, false, 2},
		{false, true, 3},
	}
	for i, s := range steps {
		if s.fail {
			h.exec.set("ready", exitError{3})
		} else {
			h.exec.set("ready", nil)
		}
		if i == 0 {
			h.settle(1, 1)
		} else {
			h.step(10*time.Second, i+1, 1)
		}
		if got := h.m.Ready("c1"); got != s.wantReady {
			t.Fatalf("step %d: ready %v, want %v", i, got, s.wantReady)
		}
		if got := h.changesOf("u1"); got != s.changes {
			t.Fatalf("step %d: %d changes, want %d", i, got, s.changes)
		}
	}
}

func TestStartupGatesLivenessAndReadiness(t *testing.T) {
	h := newHarness(t)
	h.exec.set("start", exitError{1})
	pod := testPod("u1", corev1.Container{
		Name:           "app",
		StartupProbe:   execProbe("start", 3, 0, 1, 10),
		LivenessProbe:  execProbe("live", 10, 0, 1, 3),
		ReadinessProbe: execProbe("ready", 10, 0, 1, 3),
	})
	h.m.Sync(pod, "10.0.0.1", map[string]Running{"app": running("c1")})

	h.settle(1, 3) // only the startup probe ran
	h.step(3*time.Second, 2, 3)
	if h.m.Started("c1") || h.m.Ready("c1") {
		t.Fatal("started or ready before the startup probe passed")
	}
	if h.m.Result("c1", Startup) != Unknown {
		t.Fatalf("startup %v before its failure threshold, want unknown", h.m.Result("c1", Startup))
	}
	// The startup probe passes at t0+6: its worker exits and readiness is
	// probed at once rather than at its next tick.
	h.exec.set("start", nil)
	h.step(3*time.Second, 4, 2)
	if got := h.exec.count("ready"); got != 1 {
		t.Fatalf("readiness probed %d times right after startup, want 1", got)
	}
	if got := h.exec.count("live"); got != 0 {
		t.Fatalf("liveness probed %d times before its tick, want 0", got)
	}
	if !h.m.Started("c1") || !h.m.Ready("c1") {
		t.Fatalf("started %v ready %v, want both", h.m.Started("c1"), h.m.Ready("c1"))
	}
	h.step(4*time.Second, 6, 2)
	if h.exec.count("live") != 1 || h.exec.count("ready") != 2 || h.exec.count("start") != 3 {
		t.Fatalf("probe counts live %d ready %d start %d, want 1 2 3",
			h.exec.count("live"), h.exec.count("ready"), h.exec.count("start"))
	}
}

func TestStartupFailure(t *testing.T) {
	h := newHarness(t)
	h.exec.set("start", exitError{1})
	pod := testPod("u1", corev1.Container{
		Name:          "app",
		StartupProbe:  execProbe("start", 5, 0, 1, 2),
		LivenessProbe: execProbe("live", 10, 0, 1, 3),
	})
	h.m.Sync(pod, "", map[string]Running{"app": running("c1")})
	h.settle(1, 2)
	h.step(5*time.Second, 2, 1) // the startup worker gives up
	if got := h.m.Result("c1", Startup); got != Failure {
		t.Fatalf("startup %v, want failure", got)
	}
	if h.m.Started("c1") {
		t.Fatal("started after the startup probe failed")
	}
	h.step(time.Minute, 2, 1)
	if got := h.exec.count("live"); got != 0 {
		t.Fatalf("liveness probed %d times although the container never started", got)
	}
}

func TestSyncReplacesWorkersOfRestartedContainers(t *testing.T) {
	h := newHarness(t)
	h.exec.set("live", exitError{1})
	pod := testPod("u1", corev1.Container{Name: "app", LivenessProbe: execProbe("live", 10, 0, 1, 1)})
	h.m.Sync(pod, "10.0.0.1", map[string]Running{"app": running("c1")})
	h.settle(1, 0)
	if got := h.m.Result("c1", Liveness); got != Failure {
		t.Fatalf("liveness of c1 %v, want failure", got)
	}
	eventually(t, "the failed worker to exit", func() bool { return h.m.live.Load() == 0 })

	// The agent restarted the container: c2 gets a fresh worker and verdict.
	h.exec.set("live", nil)
	h.m.Sync(pod, "10.0.0.1", map[string]Running{"app": {ID: "c2", StartedAt: h.clock.Now()}})
	h.settle(2, 1)
	if got := h.m.Result("c1", Liveness); got != Unknown {
		t.Errorf("liveness of the old container %v, want unknown (dropped)", got)
	}
	if got := h.m.Result("c2", Liveness); got != Success {
		t.Errorf("liveness of c2 %v, want success", got)
	}
	if got := h.exec.callsFor("c2"); got != 1 {
		t.Errorf("c2 probed %d times, want 1", got)
	}
	// Syncing the same container again keeps its worker.
	h.m.Sync(pod, "10.0.0.1", map[string]Running{"app": {ID: "c2", StartedAt: h.clock.Now()}})
	if n := h.m.live.Load(); n != 1 {
		t.Fatalf("%d workers after a repeated Sync, want 1", n)
	}
	// The container stopped: no worker, no result.
	h.m.Sync(pod, "10.0.0.1", map[string]Running{})
	eventually(t, "the worker to stop", func() bool { return h.m.live.Load() == 0 })
	if h.m.Result("c2", Liveness) != Unknown || h.m.Started("c2") {
		t.Error("results of a stopped container were kept")
	}
	h.step(time.Minute, 2, 0)
}

func TestRemovePodStopsWorkers(t *testing.T) {
	before := runtime.NumGoroutine()
	h := newHarness(t)
	c := corev1.Container{Name: "app", LivenessProbe: execProbe("live", 10, 0, 1, 3), ReadinessProbe: execProbe("ready", 10, 0, 1, 3)}
	h.m.Sync(testPod("u1", c), "10.0.0.1", map[string]Running{"app": running("c1")})
	h.m.Sync(testPod("u2", c), "10.0.0.2", map[string]Running{"app": running("c2")})
	h.settle(4, 4)
	if n := h.m.live.Load(); n != 4 {
		t.Fatalf("%d workers, want 4", n)
	}
	h.m.RemovePod("u1")
	eventually(t, "u1's workers to stop", func() bool { return h.m.live.Load() == 2 })
	if h.m.Ready("c1") || h.m.Result("c1", Readiness) != Unknown {
		t.Error("results of a removed pod were kept")
	}
	if !h.m.Ready("c2") {
		t.Error("the other pod lost its readiness")
	}
	h.step(10*time.Second, 6, 2)
	if got := h.exec.callsFor("c1"); got != 2 {
		t.Errorf("removed pod probed %d times, want 2 (before removal)", got)
	}
	h.m.Stop()
	if n := h.m.live.Load(); n != 0 {
		t.Fatalf("%d workers after Stop", n)
	}
	h.m.Sync(testPod("u3", c), "", map[string]Running{"app": running("c3")})
	if n := h.m.live.Load(); n != 0 {
		t.Fatalf("Sync after Stop started %d workers", n)
	}
	eventually(t, "goroutines to settle", func() bool { return runtime.NumGoroutine() <= before })
}

func TestStoppedWorkerWritesNothing(t *testing.T) {
	h := newHarness(t)
	pod := testPod("u1", corev1.Container{Name: "app", ReadinessProbe: execProbe("block", 10, 0, 1, 1)})
	h.m.Sync(pod, "", map[string]Running{"app": running("c1")})
	eventually(t, "the probe to start", func() bool { return h.exec.count("block") == 1 })
	h.m.RemovePod("u1")
	eventually(t, "the worker to stop", func() bool { return h.m.live.Load() == 0 })
	if n := h.changesOf("u1"); n != 0 {
		t.Errorf("a cancelled probe produced %d changes", n)
	}
	if len(h.results) != 0 {
		t.Errorf("a cancelled probe was counted: %v", h.results)
	}
}

func TestContainersWithoutProbes(t *testing.T) {
	h := newHarness(t)
	always := corev1.ContainerRestartPolicyAlways
	pod := testPod("u1", corev1.Container{Name: "app"})
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "init", ReadinessProbe: execProbe("init", 10, 0, 1, 1)},
		{Name: "sidecar", RestartPolicy: &always, ReadinessProbe: execProbe("sidecar", 10, 0, 1, 1)},
	}
	h.m.Sync(pod, "", map[string]Running{"app": running("c1"), "init": running("c0"), "sidecar": running("cs")})
	h.settle(1, 1)
	if got := h.exec.count("sidecar"); got != 1 {
		t.Errorf("sidecar probed %d times, want 1", got)
	}
	if got := h.exec.count("init"); got != 0 {
		t.Errorf("plain init container probed %d times, want 0", got)
	}
	for _, tc := range []struct {
		id                 string
		ready, started     bool
		liveness, readines Result
	}{
		{"c1", true, true, Unknown, Unknown},
		{"cs", true, true, Unknown, Success},
		{"c0", false, false, Unknown, Unknown},
		{"nope", false, false, Unknown, Unknown},
	} {
		if got := h.m.Ready(tc.id); got != tc.ready {
			t.Errorf("%s: ready %v, want %v", tc.id, got, tc.ready)
		}
		if got := h.m.Started(tc.id); got != tc.started {
			t.Errorf("%s: started %v, want %v", tc.id, got, tc.started)
		}
		if got := h.m.Result(tc.id, Liveness); got != tc.liveness {
			t.Errorf("%s: liveness %v, want %v", tc.id, got, tc.liveness)
		}
		if got := h.m.Result(tc.id, Readiness); got != tc.readines {
			t.Errorf("%s: readiness %v, want %v", tc.id, got, tc.readines)
		}
	}
}

func TestKindAndResultStrings(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Liveness.String(), "Liveness"},
		{Readiness.String(), "Readiness"},
		{Startup.String(), "Startup"},
		{Unknown.String(), "unknown"},
		{Success.String(), "success"},
		{Failure.String(), "failure"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
