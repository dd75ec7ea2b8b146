package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
)

const (
	always    = corev1.RestartPolicyAlways
	onFailure = corev1.RestartPolicyOnFailure
	never     = corev1.RestartPolicyNever
)

// planCase is one row of every table below.
type planCase struct {
	name string
	in   Input
	want Actions
}

// run compares whole plans (free-text Reason and Message fields aside) and
// checks the package invariants on every case.
func run(t *testing.T, cases []planCase) {
	t.Helper()
	opts := cmp.Options{
		cmpopts.EquateEmpty(),
		cmpopts.IgnoreFields(Actions{}, "Reason"),
		cmpopts.IgnoreFields(Start{}, "Message"),
		cmpopts.IgnoreFields(Kill{}, "Message"),
		cmpopts.IgnoreFields(Resize{}, "Message"),
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.in.SandboxHash == "" {
				tc.in.SandboxHash = wantHash
			}
			got := ComputeActions(tc.in)
			if diff := cmp.Diff(tc.want, got, opts); diff != "" {
				t.Errorf("ComputeActions() mismatch (-want +got):\n%s\nreason: %s", diff, got.Reason)
			}
			checkInvariants(t, tc.in, got)
		})
	}
}

// checkInvariants asserts what doc.go promises for any input.
func checkInvariants(t *testing.T, in Input, a Actions) {
	t.Helper()
	if !cmp.Equal(a, Actions{NextInit: -1, SandboxID: a.SandboxID}, cmpopts.EquateEmpty()) && a.Reason == "" {
		t.Errorf("plan %+v has no Reason", a)
	}
	killed := map[string]bool{}
	for _, k := range a.ContainersToKill {
		if killed[k.ID] {
			t.Errorf("container %s killed twice", k.ID)
		}
		killed[k.ID] = true
		if k.Reason == "" || k.Message == "" {
			t.Errorf("kill of %s without reason or message", k.ID)
		}
	}
	// Every live instance of a name that starts again must be stopped first.
	startsName := func(typ, name string) {
		for _, c := range in.Observed.Containers {
			if c.Type == typ && c.Name == name && isLive(&c) && !killed[c.ID] && !a.KillPod {
				t.Errorf("starts %s %s while %s (%s) is live and not killed", typ, name, c.ID, c.State)
			}
		}
	}
	for _, s := range a.ContainersToStart {
		startsName(labels.TypeApp, in.Pod.Spec.Containers[s.Index].Name)
		if s.RestartCount != nextAttempt(in.Observed.Containers, labels.TypeApp, in.Pod.Spec.Containers[s.Index].Name) {
			t.Errorf("start %d restart count %d reuses an attempt", s.Index, s.RestartCount)
		}
	}
	if a.NextInit >= 0 {
		startsName(labels.TypeInit, in.Pod.Spec.InitContainers[a.NextInit].Name)
		if len(a.ContainersToStart) > 0 {
			t.Errorf("starts app containers and init container %d together", a.NextInit)
		}
	}
	// Sidecar restarts: only sidecars that had their turn (before NextInit),
	// each once, with a fresh attempt.
	for j, s := range a.SidecarsToStart {
		c := &in.Pod.Spec.InitContainers[s.Index]
		if !isSidecar(c) {
			t.Errorf("SidecarsToStart names regular init container %s", c.Name)
		}
		if a.NextInit >= 0 && s.Index >= a.NextInit {
			t.Errorf("sidecar %d restarts at or after NextInit %d", s.Index, a.NextInit)
		}
		if j > 0 && a.SidecarsToStart[j-1].Index >= s.Index {
			t.Errorf("SidecarsToStart not in spec order or twice: %+v", a.SidecarsToStart)
		}
		startsName(labels.TypeInit, c.Name)
		if s.RestartCount != nextAttempt(in.Observed.Containers, labels.TypeInit, c.Name) {
			t.Errorf("sidecar %d restart count %d reuses an attempt", s.Index, s.RestartCount)
		}
	}
	// A resized container is kept: never killed, never replaced, and only
	// in a live sandbox that stays.
	for _, r := range a.ContainersToResize {
		if killed[r.ID] || a.KillPod || a.CreateSandbox {
			t.Errorf("resizes %s in a plan that stops it: %+v", r.ID, a)
		}
		for _, s := range a.ContainersToStart {
			if r.Type == labels.TypeApp && s.Index == r.Index {
				t.Errorf("resizes %s and starts it again", r.ID)
			}
		}
		for _, s := range a.SidecarsToStart {
			if r.Type == labels.TypeInit && s.Index == r.Index {
				t.Errorf("resizes sidecar %s and starts it again", r.ID)
			}
		}
	}
	if a.KillPod && !a.CreateSandbox && (len(a.ContainersToKill) > 0 || len(a.ContainersToStart) > 0 || len(a.SidecarsToStart) > 0 || a.NextInit >= 0) {
		t.Errorf("a pod that is killed for good still has work: %+v", a)
	}
	if a.CreateSandbox && (a.SandboxID != "" || len(a.ContainersToKill) > 0 || len(a.SidecarsToStart) > 0) {
		t.Errorf("new sandbox plan names sandbox %q, kills containers or restarts sidecars", a.SandboxID)
	}
}

// TestAppContainerStates is restart policy x the state of the one app
// container, for a pod without init containers and for one whose init
// containers all succeeded: both must plan the same.
func TestAppContainerStates(t *testing.T) {
	type row struct {
		policy corev1.RestartPolicy
		state  string
		cs     func(p *corev1.Pod) []Container
		want   func(p *corev1.Pod) Actions
	}
	none := func(*corev1.Pod) []Container { return nil }
	one := func(f func(Container) Container) func(p *corev1.Pod) []Container {
		return func(p *corev1.Pod) []Container { return []Container{f(app(p, "app", 2))} }
	}
	isCreated := one(created)
	isRunning := one(running)
	exited0 := one(func(c Container) Container { return exited(0, c) })
	exited1 := one(func(c Container) Container { return exited(1, c) })
	isUnknown := one(unknown)

	fresh := func(*corev1.Pod) Actions { return want(start(0, 0)) }
	keep := func(*corev1.Pod) Actions { return nothing }
	restart := func(*corev1.Pod) Actions { return want(start(0, 3)) }
	done := func(*corev1.Pod) Actions { return want(killPod) }
	replace := func(reason string) func(p *corev1.Pod) Actions {
		return func(p *corev1.Pod) Actions { return want(kill(app(p, "app", 2), reason), start(0, 3)) }
	}

	rows := []row{
		{always, "none", none, fresh},
		{always, "created", isCreated, replace(ReasonNeverStarted)},
		{always, "running", isRunning, keep},
		{always, "exited 0", exited0, restart},
		{always, "exited 1", exited1, restart},
		{always, "unknown", isUnknown, replace(ReasonUnknownState)},

		{onFailure, "none", none, fresh},
		{onFailure, "created", isCreated, replace(ReasonNeverStarted)},
		{onFailure, "running", isRunning, keep},
		{onFailure, "exited 0", exited0, done},
		{onFailure, "exited 1", exited1, restart},
		{onFailure, "unknown", isUnknown, replace(ReasonUnknownState)},

		{never, "none", none, fresh},
		{never, "created", isCreated, replace(ReasonNeverStarted)},
		{never, "running", isRunning, keep},
		{never, "exited 0", exited0, done},
		{never, "exited 1", exited1, done},
		{never, "unknown", isUnknown, replace(ReasonUnknownState)},
	}
	var cases []planCase
	for _, r := range rows {
		p := newPod(r.policy)
		cases = append(cases, planCase{
			name: string(r.policy) + "/no init/" + r.state,
			in:   Input{Pod: p, Observed: obs(r.cs(p)...)},
			want: r.want(p),
		})
		p = newPod(r.policy, withInit("i1", "i2"))
		cs := append([]Container{exited(0, initC(p, "i1", 0)), exited(0, initC(p, "i2", 0))}, r.cs(p)...)
		cases = append(cases, planCase{
			name: string(r.policy) + "/inits done/" + r.state,
			in:   Input{Pod: p, Observed: obs(cs...)},
			want: r.want(p),
		})
	}
	run(t, cases)
}

// TestInitContainers is restart policy x init-container progress.
func TestInitContainers(t *testing.T) {
	type row struct {
		state string
		cs    func(p *corev1.Pod) []Container
		want  map[corev1.RestartPolicy]func(p *corev1.Pod) Actions
	}
	same := func(f func(p *corev1.Pod) Actions) map[corev1.RestartPolicy]func(p *corev1.Pod) Actions {
		return map[corev1.RestartPolicy]func(p *corev1.Pod) Actions{always: f, onFailure: f, never: f}
	}
	fixed := func(opts ...wantOpt) func(*corev1.Pod) Actions {
		return func(*corev1.Pod) Actions { return want(opts...) }
	}
	rows := []row{
		{"none started", func(*corev1.Pod) []Container { return nil }, same(fixed(nextInit(0, 0)))},
		{"first running", func(p *corev1.Pod) []Container {
			return []Container{running(initC(p, "i1", 0))}
		}, same(fixed())},
		{"first created", func(p *corev1.Pod) []Container {
			return []Container{created(initC(p, "i1", 0))}
		}, same(func(p *corev1.Pod) Actions {
			return want(kill(initC(p, "i1", 0), ReasonNeverStarted), nextInit(0, 1))
		})},
		{"first failed", func(p *corev1.Pod) []Container {
			return []Container{exited(1, initC(p, "i1", 0))}
		}, map[corev1.RestartPolicy]func(p *corev1.Pod) Actions{
			always:    fixed(nextInit(0, 1)),
			onFailure: fixed(nextInit(0, 1)),
			never:     fixed(initFailedPod),
		}},
		{"first OOM-killed with code 0", func(p *corev1.Pod) []Container {
			c := exited(0, initC(p, "i1", 0))
			c.Reason = "OOMKilled"
			return []Container{c}
		}, map[corev1.RestartPolicy]func(p *corev1.Pod) Actions{
			always:    fixed(nextInit(0, 1)),
			onFailure: fixed(nextInit(0, 1)),
			never:     fixed(initFailedPod),
		}},
		{"first unknown", func(p *corev1.Pod) []Container {
			return []Container{unknown(initC(p, "i1", 0))}
		}, map[corev1.RestartPolicy]func(p *corev1.Pod) Actions{
			always:    func(p *corev1.Pod) Actions { return want(kill(initC(p, "i1", 0), ReasonUnknownState), nextInit(0, 1)) },
			onFailure: func(p *corev1.Pod) Actions { return want(kill(initC(p, "i1", 0), ReasonUnknownState), nextInit(0, 1)) },
			never:     fixed(initFailedPod),
		}},
		{"first failed twice, third attempt", func(p *corev1.Pod) []Container {
			return []Container{exited(1, initC(p, "i1", 1)), exited(1, initC(p, "i1", 0))}
		}, map[corev1.RestartPolicy]func(p *corev1.Pod) Actions{
			always:    fixed(nextInit(0, 2)),
			onFailure: fixed(nextInit(0, 2)),
			never:     fixed(initFailedPod),
		}},
		{"first failed then succeeded, second pending", func(p *corev1.Pod) []Container {
			return []Container{exited(0, initC(p, "i1", 1)), exited(1, initC(p, "i1", 0))}
		}, same(fixed(nextInit(1, 0)))},
		{"first succeeded, second pending", func(p *corev1.Pod) []Container {
			return []Container{exited(0, initC(p, "i1", 0))}
		}, same(fixed(nextInit(1, 0)))},
		{"first succeeded, second running", func(p *corev1.Pod) []Container {
			return []Container{running(initC(p, "i2", 0)), exited(0, initC(p, "i1", 0))}
		}, same(fixed())},
		{"first succeeded, second failed", func(p *corev1.Pod) []Container {
			return []Container{exited(2, initC(p, "i2", 0)), exited(0, initC(p, "i1", 0))}
		}, map[corev1.RestartPolicy]func(p *corev1.Pod) Actions{
			always:    fixed(nextInit(1, 1)),
			onFailure: fixed(nextInit(1, 1)),
			never:     fixed(initFailedPod),
		}},
		{"all succeeded", func(p *corev1.Pod) []Container {
			return []Container{exited(0, initC(p, "i2", 0)), exited(0, initC(p, "i1", 0))}
		}, same(fixed(start(0, 0)))},
		{"all succeeded, app running", func(p *corev1.Pod) []Container {
			return []Container{running(app(p, "app", 0)), exited(0, initC(p, "i2", 0)), exited(0, initC(p, "i1", 0))}
		}, same(fixed())},
		{"app running, init containers garbage-collected", func(p *corev1.Pod) []Container {
			return []Container{running(app(p, "app", 0))}
		}, same(fixed())},
		{"init containers succeeded in an old sandbox only", func(p *corev1.Pod) []Container {
			return []Container{inSandbox("sb0", exited(0, initC(p, "i2", 0))), inSandbox("sb0", exited(0, initC(p, "i1", 0)))}
		}, same(fixed(nextInit(0, 1)))},
	}
	var cases []planCase
	for _, r := range rows {
		for _, rp := range []corev1.RestartPolicy{always, onFailure, never} {
			p := newPod(rp, withInit("i1", "i2"))
			cases = append(cases, planCase{
				name: string(rp) + "/" + r.state,
				in:   Input{Pod: p, Observed: obs(r.cs(p)...)},
				want: r.want[rp](p),
			})
		}
	}
	run(t, cases)
}
