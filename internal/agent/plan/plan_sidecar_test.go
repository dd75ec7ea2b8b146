package plan

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestSidecars is restart policy x the states of a pod with a sidecar
// "proxy" followed by a regular init container "i1": the sidecar must be
// running (and started) before i1 starts, the app containers start once i1
// succeeded, and the sidecar is restarted whatever the pod's policy until
// the pod is finished.
func TestSidecars(t *testing.T) {
	type row struct {
		state string
		in    func(p *corev1.Pod) Input
		want  map[corev1.RestartPolicy]func(p *corev1.Pod) Actions
	}
	same := func(f func(p *corev1.Pod) Actions) map[corev1.RestartPolicy]func(p *corev1.Pod) Actions {
		return map[corev1.RestartPolicy]func(p *corev1.Pod) Actions{always: f, onFailure: f, never: f}
	}
	fixed := func(opts ...wantOpt) func(*corev1.Pod) Actions {
		return func(*corev1.Pod) Actions { return want(opts...) }
	}
	observed := func(f func(p *corev1.Pod) []Container) func(p *corev1.Pod) Input {
		return func(p *corev1.Pod) Input { return Input{Pod: p, Observed: obs(f(p)...)} }
	}
	proxy := func(p *corev1.Pod) Container { return initC(p, "proxy", 0) }
	i1 := func(p *corev1.Pod) Container { return initC(p, "i1", 0) }
	appC := func(p *corev1.Pod) Container { return app(p, "app", 0) }

	rows := []row{
		{"none started", observed(func(*corev1.Pod) []Container { return nil }), same(fixed(nextInit(0, 0)))},
		{"sidecar running: next init container starts", observed(func(p *corev1.Pod) []Container {
			return []Container{running(proxy(p))}
		}), same(fixed(nextInit(1, 0)))},
		{"sidecar and i1 running", observed(func(p *corev1.Pod) []Container {
			return []Container{running(i1(p)), running(proxy(p))}
		}), same(fixed())},
		{"sidecar running, i1 succeeded: app starts", observed(func(p *corev1.Pod) []Container {
			return []Container{exited(0, i1(p)), running(proxy(p))}
		}), same(fixed(start(0, 0)))},
		{"sidecar exited while i1 runs: restarted whatever the policy", observed(func(p *corev1.Pod) []Container {
			return []Container{running(i1(p)), exited(1, proxy(p))}
		}), same(fixed(sidecar(0, 1)))},
		{"sidecar exited 0 before i1 started: its own next step", observed(func(p *corev1.Pod) []Container {
			return []Container{exited(0, proxy(p))}
		}), same(fixed(nextInit(0, 1)))},
		{"sidecar exited 1 before i1 started: not an init failure", observed(func(p *corev1.Pod) []Container {
			return []Container{exited(1, proxy(p))}
		}), same(fixed(nextInit(0, 1)))},
		{"sidecar unknown before i1 started", observed(func(p *corev1.Pod) []Container {
			return []Container{unknown(proxy(p))}
		}), same(func(p *corev1.Pod) Actions {
			return want(kill(proxy(p), ReasonUnknownState), nextInit(0, 1))
		})},
		{"sidecar created, never started", observed(func(p *corev1.Pod) []Container {
			return []Container{created(proxy(p))}
		}), same(func(p *corev1.Pod) Actions {
			return want(kill(proxy(p), ReasonNeverStarted), nextInit(0, 1))
		})},
		{"i1 failed, sidecar running", observed(func(p *corev1.Pod) []Container {
			return []Container{exited(1, i1(p)), running(proxy(p))}
		}), map[corev1.RestartPolicy]func(p *corev1.Pod) Actions{
			always:    fixed(nextInit(1, 1)),
			onFailure: fixed(nextInit(1, 1)),
			never:     fixed(initFailedPod),
		}},
		{"i1 failed, sidecar exited too", observed(func(p *corev1.Pod) []Container {
			return []Container{exited(1, i1(p)), exited(137, proxy(p))}
		}), map[corev1.RestartPolicy]func(p *corev1.Pod) Actions{
			always:    fixed(sidecar(0, 1), nextInit(1, 1)),
			onFailure: fixed(sidecar(0, 1), nextInit(1, 1)),
			never:     fixed(initFailedPod),
		}},
		{"app and sidecar running", observed(func(p *corev1.Pod) []Container {
			return []Container{running(appC(p)), exited(0, i1(p)), running(proxy(p))}
		}), same(fixed())},
		{"app running, sidecar exited: sidecar restarted", observed(func(p *corev1.Pod) []Container {
			return []Container{running(appC(p)), exited(0, i1(p)), exited(137, proxy(p))}
		}), same(fixed(sidecar(0, 1)))},
		{"app running, sidecar gone: started again", observed(func(p *corev1.Pod) []Container {
			return []Container{running(appC(p))}
		}), same(fixed(sidecar(0, 0)))},
		{"app running, sidecar unknown", observed(func(p *corev1.Pod) []Container {
			return []Container{running(appC(p)), unknown(proxy(p))}
		}), same(func(p *corev1.Pod) Actions {
			return want(kill(proxy(p), ReasonUnknownState), sidecar(0, 1))
		})},
		{"app running, sidecar spec changed: only the sidecar restarts", observed(func(p *corev1.Pod) []Container {
			return []Container{running(appC(p)), exited(0, i1(p)), running(withHash("old", proxy(p)))}
		}), same(func(p *corev1.Pod) Actions {
			return want(kill(withHash("old", proxy(p)), ReasonSpecChanged), sidecar(0, 1))
		})},
		{"app running, sidecar liveness failed: restarted even under Never", func(p *corev1.Pod) Input {
			in := Input{Pod: p, Observed: obs(running(appC(p)), running(proxy(p)))}
			in.LivenessFailed = map[string]bool{proxy(p).ID: true}
			return in
		}, same(func(p *corev1.Pod) Actions {
			return want(kill(proxy(p), ReasonLivenessFailed), sidecar(0, 1))
		})},
		{"app exited 0, sidecar running", observed(func(p *corev1.Pod) []Container {
			return []Container{exited(0, appC(p)), exited(0, i1(p)), running(proxy(p))}
		}), map[corev1.RestartPolicy]func(p *corev1.Pod) Actions{
			always:    fixed(start(0, 1)),
			onFailure: fixed(killPod),
			never:     fixed(killPod),
		}},
		{"app exited 1, sidecar running", observed(func(p *corev1.Pod) []Container {
			return []Container{exited(1, appC(p)), exited(0, i1(p)), running(proxy(p))}
		}), map[corev1.RestartPolicy]func(p *corev1.Pod) Actions{
			always:    fixed(start(0, 1)),
			onFailure: fixed(start(0, 1)),
			never:     fixed(killPod),
		}},
		{"app exited 0, sidecar exited: no sidecar restart for a finished pod", observed(func(p *corev1.Pod) []Container {
			return []Container{exited(0, appC(p)), exited(0, i1(p)), exited(137, proxy(p))}
		}), map[corev1.RestartPolicy]func(p *corev1.Pod) Actions{
			always:    fixed(sidecar(0, 1), start(0, 1)),
			onFailure: fixed(killPod),
			never:     fixed(killPod),
		}},
	}
	var cases []planCase
	for _, r := range rows {
		for _, rp := range []corev1.RestartPolicy{always, onFailure, never} {
			p := newPod(rp, withInit("proxy", "i1"), withSidecars("proxy"))
			cases = append(cases, planCase{name: string(rp) + "/" + r.state, in: r.in(p), want: r.want[rp](p)})
		}
	}
	run(t, cases)
}

// TestSidecarStartupProbe: a sidecar with a startup probe counts as started
// only once Input.Started names it; until then nothing after it starts, and
// a failed startup probe replaces it.
func TestSidecarStartupProbe(t *testing.T) {
	p := newPod(never, withInit("mesh", "i1"), withSidecars("mesh"), withStartupProbe("mesh"))
	mesh := running(initC(p, "mesh", 0))
	last := newPod(always, withInit("mesh"), withSidecars("mesh"), withStartupProbe("mesh"))
	lastMesh := running(initC(last, "mesh", 0))
	run(t, []planCase{
		{"running, probe pending: wait", Input{Pod: p, Observed: obs(mesh)}, nothing},
		{
			"running, probe passed: next init container",
			Input{Pod: p, Observed: obs(mesh), Started: map[string]bool{mesh.ID: true}},
			want(nextInit(1, 0)),
		},
		{
			"running, startup probe failed: replaced even under Never",
			Input{Pod: p, Observed: obs(mesh), StartupFailed: map[string]bool{mesh.ID: true}},
			want(kill(mesh, ReasonStartupFailed), nextInit(0, 1)),
		},
		{
			"running, not started, spec changed: replaced",
			Input{Pod: p, Observed: obs(withHash("old", mesh))},
			want(kill(withHash("old", mesh), ReasonSpecChanged), nextInit(0, 1)),
		},
		{"last init container, probe pending: apps wait", Input{Pod: last, Observed: obs(lastMesh)}, nothing},
		{
			"last init container, probe passed: apps start",
			Input{Pod: last, Observed: obs(lastMesh), Started: map[string]bool{lastMesh.ID: true}},
			want(start(0, 0)),
		},
		{
			"started another time for the app: not asked again",
			Input{Pod: last, Observed: obs(running(app(last, "app", 0)), lastMesh)},
			nothing,
		},
	})
}

// TestSidecarSandbox: a new sandbox starts the init sequence from the first
// init container, sidecar or not; a finished pod whose sidecars were
// stopped with it stays finished.
func TestSidecarSandbox(t *testing.T) {
	dead := []Sandbox{notReadySB(curSB, 1)}
	pa := newPod(always, withInit("proxy", "i1"), withSidecars("proxy"))
	po := newPod(onFailure, withInit("i1", "proxy"), withSidecars("proxy"))
	pe := newPod(onFailure, withInit("i1", "proxy"), withSidecars("proxy"))
	pe.Spec.InitContainers[1].Image = "busybox:1.37" // edited after the pod finished
	run(t, []planCase{
		{
			"no sandbox",
			Input{Pod: pa},
			want(newSandbox(0, false), nextInit(0, 0)),
		},
		{
			"Always, sandbox died: new sandbox, sidecar first",
			Input{Pod: pa, Observed: Observed{Sandboxes: dead, Containers: []Container{
				running(app(pa, "app", 0)), exited(0, initC(pa, "i1", 0)), running(initC(pa, "proxy", 0)),
			}}},
			want(newSandbox(2, true), nextInit(0, 1)),
		},
		{
			"OnFailure, app succeeded, sidecar stopped, sandbox stopped: nothing to do",
			Input{Pod: po, Observed: Observed{Sandboxes: dead, Containers: []Container{
				exited(0, app(po, "app", 0)), exited(137, initC(po, "proxy", 0)), exited(0, initC(po, "i1", 0)),
			}}},
			want(noSandbox),
		},
		{
			"OnFailure, finished, sidecar edited since: runs again",
			Input{Pod: pe, Observed: Observed{Sandboxes: dead, Containers: []Container{
				exited(0, app(pe, "app", 0)), exited(137, withHash("old", initC(pe, "proxy", 0))), exited(0, initC(pe, "i1", 0)),
			}}},
			want(newSandbox(2, true), nextInit(0, 1)),
		},
	})
}
