package kuberuntime

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/prober"
)

// sidecarPod is a pod with restart policy rp, init containers "proxy" (a
// sidecar) and "setup" (a regular one), and the app container "app".
func sidecarPod(rp corev1.RestartPolicy) *corev1.Pod {
	return testPod(func(p *corev1.Pod) {
		p.Spec.RestartPolicy = rp
		proxy := testContainer("proxy")
		proxy.RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
		p.Spec.InitContainers = []corev1.Container{proxy, testContainer("setup")}
	})
}

// TestSidecarLifecycle: the sidecar starts first, the regular init
// container once it runs, the app once that succeeded; a sidecar that
// exits is restarted under restartPolicy Never too, with crash-loop
// backoff, while the app keeps running.
func TestSidecarLifecycle(t *testing.T) {
	e := newEnv(t)
	pod := sidecarPod(corev1.RestartPolicyNever)
	creates := func(mark int) []string { return withPrefix(e.log.since(mark), "CreateContainer") }

	steps := []struct {
		name string
		want []string
	}{
		{"sandbox and sidecar", []string{"CreateContainer:proxy:0"}},
		{"regular init container beside the running sidecar", []string{"CreateContainer:setup:0"}},
	}
	for _, s := range steps {
		mark := e.log.len()
		e.mustSync(pod)
		if got := creates(mark); !cmp.Equal(got, s.want) {
			t.Fatalf("%s: creates = %v, want %v", s.name, got, s.want)
		}
	}
	mark := e.log.len()
	e.mustSync(pod) // setup still runs: nothing
	if got := creates(mark); len(got) != 0 {
		t.Fatalf("created %v while setup runs", got)
	}
	e.rt.exit(t, e.running(pod, "setup").ID, 0, e.clk.Now())
	mark = e.log.len()
	e.mustSync(pod)
	if got, want := creates(mark), []string{"CreateContainer:app:0"}; !cmp.Equal(got, want) {
		t.Fatalf("after setup succeeded creates = %v, want %v", got, want)
	}
	app := e.running(pod, "app")

	// The sidecar crashes: restarted at once, although the pod's policy
	// is Never.
	e.rt.exit(t, e.running(pod, "proxy").ID, 1, e.clk.Now())
	mark = e.log.len()
	e.mustSync(pod)
	if got, want := creates(mark), []string{"CreateContainer:proxy:1"}; !cmp.Equal(got, want) {
		t.Fatalf("after the sidecar crashed creates = %v, want %v", got, want)
	}
	// It crashes again: held back 10s.
	e.rt.exit(t, e.running(pod, "proxy").ID, 1, e.clk.Now())
	e.clk.Step(5 * time.Second)
	mark = e.log.len()
	if res := e.sync(pod); !IsWaiting(res.Err) {
		t.Fatalf("sync in the sidecar's backoff: err = %v, want a waiting error", res.Err)
	}
	if got := creates(mark); len(got) != 0 {
		t.Fatalf("5s into a 10s backoff created %v", got)
	}
	if w := e.waitingOf(string(pod.UID))["proxy"]; w.Reason != reasonCrashLoopBackOff {
		t.Errorf("Waiting[proxy] = %+v, want %s", w, reasonCrashLoopBackOff)
	}
	e.clk.Step(6 * time.Second)
	mark = e.log.len()
	e.mustSync(pod)
	if got, want := creates(mark), []string{"CreateContainer:proxy:2"}; !cmp.Equal(got, want) {
		t.Fatalf("past the backoff creates = %v, want %v", got, want)
	}
	if got := e.running(pod, "app"); got.ID != app.ID {
		t.Errorf("app changed from %s to %s while the sidecar restarted", app.ID, got.ID)
	}
	if got := withPrefix(e.log.since(0), "StopContainer:"+app.ID); len(got) != 0 {
		t.Errorf("app stopped: %v", got)
	}
}

// TestSidecarStoppedWhenPodFinishes: with restartPolicy Never, once the app
// exits the pod is done: the app's exit stops the sidecar (after the app),
// then the sandbox, and nothing starts again.
func TestSidecarStoppedWhenPodFinishes(t *testing.T) {
	e := newEnv(t)
	pod := sidecarPod(corev1.RestartPolicyNever)
	e.mustSync(pod)
	e.mustSync(pod)
	e.rt.exit(t, e.running(pod, "setup").ID, 0, e.clk.Now())
	e.mustSync(pod)
	e.rt.exit(t, e.running(pod, "app").ID, 0, e.clk.Now())
	proxy := e.running(pod, "proxy")
	sandbox := e.observe(pod).Observed.Sandboxes[0].ID

	mark := e.log.len()
	res := e.mustSync(pod)
	if !res.Actions.KillPod {
		t.Fatalf("plan after the app finished = %+v, want KillPod", res.Actions)
	}
	before(t, e.log.since(mark), "StopContainer:"+proxy.ID, "StopPodSandbox:"+sandbox)
	for i := 0; i < 2; i++ {
		mark = e.log.len()
		e.sync(pod)
		if got := withPrefix(e.log.since(mark), "CreateContainer"); len(got) != 0 {
			t.Fatalf("finished pod started %v", got)
		}
		if got := withPrefix(e.log.since(mark), "RunPodSandbox"); len(got) != 0 {
			t.Fatalf("finished pod got a new sandbox: %v", got)
		}
	}
}

// TestKillPodStopsSidecarsLast: app containers stop first, then the
// sidecars one at a time in reverse spec order, then the sandbox; without
// the manifest, live init containers still stop after the app containers.
func TestKillPodStopsSidecarsLast(t *testing.T) {
	for _, withPod := range []bool{true, false} {
		name := "pod"
		if !withPod {
			name = "no manifest"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			pod := testPod(func(p *corev1.Pod) {
				var inits []corev1.Container
				for _, n := range []string{"s1", "s2", "s3"} {
					c := testContainer(n)
					c.RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
					inits = append(inits, c)
				}
				p.Spec.InitContainers = inits
				p.Spec.Containers = []corev1.Container{testContainer("a"), testContainer("b")}
			})
			for i := 0; i < 4; i++ { // s1, s2, s3, then the apps
				e.mustSync(pod)
			}
			ids := map[string]string{}
			for _, n := range []string{"s1", "s2", "s3", "a", "b"} {
				ids[n] = e.running(pod, n).ID
			}
			pr := e.observe(pod)
			sandbox := pr.Observed.Sandboxes[0].ID
			var p *corev1.Pod
			if withPod {
				p = pod
			}
			mark := e.log.len()
			if err := e.m.TerminatePod(e.ctx, p, pr); err != nil {
				t.Fatalf("TerminatePod: %v", err)
			}
			calls := e.log.since(mark)
			for _, app := range []string{"a", "b"} {
				before(t, calls, "StopContainer:"+ids[app], "StopContainer:"+ids["s3"],
					"StopContainer:"+ids["s2"], "StopContainer:"+ids["s1"], "StopPodSandbox:"+sandbox)
			}
		})
	}
}

// startupProbes answers Unknown for startup probes until started, Success
// for everything else.
type startupProbes struct {
	mu      sync.Mutex
	started map[string]bool
}

func (f *startupProbes) start(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started == nil {
		f.started = map[string]bool{}
	}
	f.started[id] = true
}

func (f *startupProbes) Result(id string, k prober.Kind) prober.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	if k == prober.Startup && !f.started[id] {
		return prober.Unknown
	}
	return prober.Success
}

// TestSidecarStartupProbeGatesApps: a sidecar with a startup probe lets the
// app containers start only once the prober says it started.
func TestSidecarStartupProbeGatesApps(t *testing.T) {
	probes := &startupProbes{}
	e := newEnv(t, func(c *Config) { c.Probes = probes })
	pod := testPod(func(p *corev1.Pod) {
		side := testContainer("mesh")
		side.RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
		side.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		p.Spec.InitContainers = []corev1.Container{side}
	})
	e.mustSync(pod)
	mesh := e.running(pod, "mesh")
	mark := e.log.len()
	e.mustSync(pod)
	if got := withPrefix(e.log.since(mark), "CreateContainer"); len(got) != 0 {
		t.Fatalf("created %v before the sidecar's startup probe passed", got)
	}
	probes.start(mesh.ID)
	mark = e.log.len()
	e.mustSync(pod)
	if got, want := withPrefix(e.log.since(mark), "CreateContainer"), []string{"CreateContainer:app:0"}; !cmp.Equal(got, want) {
		t.Errorf("after the startup probe passed creates = %v, want %v", got, want)
	}
}
