package kuberuntime

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/plan"
	"github.com/crib-dev/crib/internal/agent/prober"
)

func TestStartContainerFailureReplacesCreatedInstance(t *testing.T) {
	e := newEnv(t)
	pod := testPod()
	e.rt.InjectError("StartContainer", status.Error(codes.Unknown, "exec format error"))
	res := e.sync(pod)
	if res.Err == nil {
		t.Fatal("SyncPod: no error after StartContainer failed")
	}
	if w := e.waitingOf(string(pod.UID))["app"]; w.Reason != reasonRunContainerError {
		t.Errorf("Waiting[app] = %+v, want %s", w, reasonRunContainerError)
	}
	created := e.rt.containerIDs(runtimeapi.ContainerState_CONTAINER_CREATED)
	if len(created) != 1 {
		t.Fatalf("created-but-not-started containers = %v, want 1", created)
	}

	mark := e.log.len()
	e.mustSync(pod)
	before(t, e.log.since(mark), "StopContainer:"+created[0], "CreateContainer:app:1")
	e.running(pod, "app")
	if got := e.rt.containerIDs(runtimeapi.ContainerState_CONTAINER_CREATED); len(got) != 0 {
		t.Errorf("created containers left: %v", got)
	}
	if w, ok := e.waitingOf(string(pod.UID))["app"]; ok {
		t.Errorf("Waiting[app] after the start = %+v, want none", w)
	}
}

func TestCreateContainerFailureRetriesSameAttempt(t *testing.T) {
	e := newEnv(t)
	pod := testPod()
	e.rt.InjectError("CreateContainer", status.Error(codes.Unknown, "no space left"))
	if res := e.sync(pod); res.Err == nil {
		t.Fatal("SyncPod: no error after CreateContainer failed")
	}
	if w := e.waitingOf(string(pod.UID))["app"]; w.Reason != reasonCreateError || !strings.Contains(w.Message, "no space left") {
		t.Errorf("Waiting[app] = %+v, want %s with the runtime's message", w, reasonCreateError)
	}
	mark := e.log.len()
	e.mustSync(pod)
	calls := e.log.since(mark)
	if got := withPrefix(calls, "CreateContainer"); !cmp.Equal(got, []string{"CreateContainer:app:0"}) {
		t.Errorf("retry creates = %v, want app attempt 0 again", got)
	}
	if got := withPrefix(calls, "RunPodSandbox"); len(got) != 0 {
		t.Errorf("retry made a new sandbox: %v", got)
	}
}

func TestSandboxFailures(t *testing.T) {
	t.Run("RunPodSandbox", func(t *testing.T) {
		e := newEnv(t)
		pod := testPod()
		e.rt.InjectError("RunPodSandbox", status.Error(codes.Unknown, "cni failed"))
		res := e.sync(pod)
		if res.Err == nil || !strings.Contains(res.SandboxError, "cni failed") {
			t.Fatalf("SyncPod = %+v, want a sandbox error naming the cause", res)
		}
		if e.creates() != 0 {
			t.Errorf("created containers without a sandbox")
		}
		mark := e.log.len()
		e.mustSync(pod)
		calls := e.log.since(mark)
		if !cmp.Equal(withPrefix(calls, "RunPodSandbox"), []string{"RunPodSandbox:0"}) {
			t.Errorf("retry = %v, want RunPodSandbox:0", calls)
		}
		e.running(pod, "app")
	})
	t.Run("PodSandboxStatus", func(t *testing.T) {
		e := newEnv(t)
		pod := testPod()
		e.rt.InjectError("PodSandboxStatus", status.Error(codes.Unknown, "status broke"))
		res := e.sync(pod)
		if res.Err == nil || res.SandboxError == "" {
			t.Fatalf("SyncPod = %+v, want a sandbox error", res)
		}
		if !cmp.Equal(withPrefix(e.log.since(0), "StopPodSandbox"), []string{"StopPodSandbox:web_default_uid-1_0"}) {
			t.Errorf("a sandbox whose status failed was not stopped: %v", e.log.since(0))
		}
		mark := e.log.len()
		e.mustSync(pod)
		calls := e.log.since(mark)
		if !cmp.Equal(withPrefix(calls, "RunPodSandbox"), []string{"RunPodSandbox:1"}) {
			t.Errorf("retry = %v, want RunPodSandbox:1", calls)
		}
		c := e.running(pod, "app")
		if c.SandboxID != "web_default_uid-1_1" {
			t.Errorf("app runs in %s, want the new sandbox", c.SandboxID)
		}
	})
	t.Run("Volumes", func(t *testing.T) {
		e := newEnv(t)
		pod := testPod()
		e.vol.prepareErr = errors.New("disk full")
		res := e.sync(pod)
		if res.Err == nil || !strings.Contains(res.SandboxError, "disk full") {
			t.Fatalf("SyncPod = %+v, want a sandbox error naming the volume failure", res)
		}
		if got := withPrefix(e.log.since(0), "RunPodSandbox"); len(got) != 0 {
			t.Errorf("made a sandbox without volumes: %v", got)
		}
	})
}

// fakeProbes answers Failure for the kinds and IDs set.
type fakeProbes struct {
	mu     sync.Mutex
	failed map[prober.Kind]map[string]bool
}

func (f *fakeProbes) fail(k prober.Kind, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed == nil {
		f.failed = map[prober.Kind]map[string]bool{}
	}
	if f.failed[k] == nil {
		f.failed[k] = map[string]bool{}
	}
	f.failed[k][id] = true
}

func (f *fakeProbes) Result(id string, k prober.Kind) prober.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed[k][id] {
		return prober.Failure
	}
	return prober.Success
}

func TestFailedProbesRestartContainer(t *testing.T) {
	for _, k := range []prober.Kind{prober.Liveness, prober.Startup} {
		t.Run(k.String(), func(t *testing.T) {
			probes := &fakeProbes{}
			e := newEnv(t, func(c *Config) { c.Probes = probes })
			pod := testPod()
			e.mustSync(pod)
			old := e.running(pod, "app")

			// A readiness failure restarts nothing.
			probes.fail(prober.Readiness, old.ID)
			mark := e.log.len()
			e.mustSync(pod)
			if got := withPrefix(e.log.since(mark), "StopContainer"); len(got) != 0 {
				t.Fatalf("readiness failure stopped %v", got)
			}

			probes.fail(k, old.ID)
			mark = e.log.len()
			e.mustSync(pod)
			before(t, e.log.since(mark), "StopContainer:"+old.ID, "CreateContainer:app:1")
			if c := e.running(pod, "app"); c.ID == old.ID {
				t.Errorf("the failed container still runs")
			}
		})
	}
}

func TestCrashLoopBackoffResetsAfterGoodRun(t *testing.T) {
	e := newEnv(t)
	pod := testPod()
	e.mustSync(pod)
	e.rt.exit(t, e.running(pod, "app").ID, 1, e.clk.Now())
	e.mustSync(pod) // restarted at once, the next crash waits 10s
	e.rt.exit(t, e.running(pod, "app").ID, 1, e.clk.Now())
	e.clk.Step(11 * time.Second)
	e.mustSync(pod) // restarted after 10s, the next crash would wait 20s

	// It runs well for longer than ResetAfter (10m), then crashes: it
	// restarts at once.
	e.clk.Step(11 * time.Minute)
	e.rt.exit(t, e.running(pod, "app").ID, 1, e.clk.Now())
	mark := e.log.len()
	e.mustSync(pod)
	if got := withPrefix(e.log.since(mark), "CreateContainer"); !cmp.Equal(got, []string{"CreateContainer:app:3"}) {
		t.Fatalf("crash after a long good run: creates = %v, want an immediate restart", got)
	}
}

func TestObservedAttemptComesFromRestartCount(t *testing.T) {
	e := newEnv(t)
	pod := testPod()
	e.mustSync(pod)
	for i := 0; i < 3; i++ {
		e.rt.exit(t, e.running(pod, "app").ID, 1, e.clk.Now())
		e.clk.Step(time.Hour)
		e.mustSync(pod)
	}
	obs, err := e.m.CollectGarbage(e.ctx, e.observe(pod))
	if err != nil {
		t.Fatal(err)
	}
	var attempts []uint32
	for _, c := range obs.Containers {
		attempts = append(attempts, c.Attempt)
		if c.State == plan.ContainerExited && c.FinishedAt.IsZero() {
			t.Errorf("exited container %s has no FinishedAt", c.ID)
		}
	}
	// Garbage collection keeps the newest two instances.
	if !cmp.Equal(attempts, []uint32{3, 2}) {
		t.Errorf("observed attempts = %v, want [3 2]", attempts)
	}
}
