package plan

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestSandbox covers when a new sandbox is made, its attempt, and what
// starts in it.
func TestSandbox(t *testing.T) {
	p := newPod(always)
	pi := newPod(always, withInit("i1", "i2"))
	pHost := newPod(always, hostNetwork)
	pTwo := newPod(onFailure, withApps("a", "b"))

	noIP := readySB(curSB, 1)
	noIP.IP, noIP.IPs = "", nil
	oldHash := readySB(curSB, 1)
	oldHash.Hash = "older-hash"

	sbs := func(s ...Sandbox) []Sandbox { return s }

	run(t, []planCase{
		{
			name: "no sandbox: create attempt 0, nothing to kill",
			in:   Input{Pod: p},
			want: want(newSandbox(0, false), start(0, 0)),
		},
		{
			name: "no sandbox, init containers: first init container",
			in:   Input{Pod: pi},
			want: want(newSandbox(0, false), nextInit(0, 0)),
		},
		{
			name: "not ready: kill, create attempt+1, restart count continues",
			in: Input{Pod: p, Observed: Observed{
				Sandboxes:  sbs(notReadySB(curSB, 1)),
				Containers: []Container{exited(137, app(p, "app", 4))},
			}},
			want: want(newSandbox(2, true), start(0, 5)),
		},
		{
			name: "not ready with init containers: all init containers again from the first",
			in: Input{Pod: pi, Observed: Observed{
				Sandboxes: sbs(notReadySB(curSB, 1)),
				Containers: []Container{
					exited(137, app(pi, "app", 0)), exited(0, initC(pi, "i2", 0)), exited(0, initC(pi, "i1", 0)),
				},
			}},
			want: want(newSandbox(2, true), nextInit(0, 1)),
		},
		{
			name: "pod-level hash changed",
			in:   Input{Pod: p, Observed: Observed{Sandboxes: sbs(oldHash), Containers: []Container{running(app(p, "app", 0))}}},
			want: want(newSandbox(2, true), start(0, 1)),
		},
		{
			name: "no IP on the pod network",
			in:   Input{Pod: p, Observed: Observed{Sandboxes: sbs(noIP), Containers: []Container{running(app(p, "app", 0))}}},
			want: want(newSandbox(2, true), start(0, 1)),
		},
		{
			name: "no IP on the host network is fine",
			in:   Input{Pod: pHost, Observed: Observed{Sandboxes: sbs(noIP), Containers: []Container{running(app(pHost, "app", 0))}}},
			want: nothing,
		},
		{
			name: "two ready sandboxes: replace both",
			in: Input{Pod: p, Observed: Observed{
				Sandboxes:  sbs(readySB("sb0", 0), readySB(curSB, 1)),
				Containers: []Container{running(app(p, "app", 0))},
			}},
			want: want(newSandbox(2, true), start(0, 1)),
		},
		{
			name: "newest sandbox decides, whatever the slice order",
			in: Input{Pod: p, Observed: Observed{
				Sandboxes:  sbs(notReadySB("sb0", 0), readySB(curSB, 1)),
				Containers: []Container{running(app(p, "app", 1)), inSandbox("sb0", exited(0, app(p, "app", 0)))},
			}},
			want: nothing,
		},
		{
			name: "OnFailure: only the containers that did not succeed start again",
			in: Input{Pod: pTwo, Observed: Observed{
				Sandboxes:  sbs(notReadySB(curSB, 1)),
				Containers: []Container{exited(0, app(pTwo, "a", 0)), exited(1, app(pTwo, "b", 0))},
			}},
			want: want(newSandbox(2, true), start(1, 1)),
		},
		{
			name: "Never: the sandbox died before any container: retry the sandbox",
			in:   Input{Pod: newPod(never), Observed: Observed{Sandboxes: sbs(notReadySB(curSB, 1))}},
			want: want(newSandbox(2, true), start(0, 0)),
		},
		{
			name: "Never: first sandbox",
			in:   Input{Pod: newPod(never)},
			want: want(newSandbox(0, false), start(0, 0)),
		},
	})
}

// TestFinishedPod: a pod whose containers are done for good gets no new
// sandbox; it is killed only while something still runs.
func TestFinishedPod(t *testing.T) {
	pn := newPod(never)
	po := newPod(onFailure)
	pni := newPod(never, withInit("i1"))
	poTwo := newPod(onFailure, withApps("a", "b"))
	dead := []Sandbox{notReadySB(curSB, 1)}

	run(t, []planCase{
		{
			name: "Never, app exited 0, sandbox stopped: nothing to do",
			in:   Input{Pod: pn, Observed: Observed{Sandboxes: dead, Containers: []Container{exited(0, app(pn, "app", 0))}}},
			want: want(noSandbox),
		},
		{
			name: "Never, app exited 1, sandbox stopped: nothing to do",
			in:   Input{Pod: pn, Observed: Observed{Sandboxes: dead, Containers: []Container{exited(1, app(pn, "app", 0))}}},
			want: want(noSandbox),
		},
		{
			name: "Never, sandbox died under a running container: kill, no new sandbox",
			in:   Input{Pod: pn, Observed: Observed{Sandboxes: dead, Containers: []Container{running(app(pn, "app", 0))}}},
			want: want(noSandbox, killPod),
		},
		{
			name: "Never, init container failed, sandbox stopped: pod failed, nothing to do",
			in:   Input{Pod: pni, Observed: Observed{Sandboxes: dead, Containers: []Container{exited(1, initC(pni, "i1", 0))}}},
			want: want(noSandbox, func(a *Actions) { a.InitFailed = true }),
		},
		{
			name: "OnFailure, app succeeded, sandbox stopped: nothing to do",
			in:   Input{Pod: po, Observed: Observed{Sandboxes: dead, Containers: []Container{exited(0, app(po, "app", 0))}}},
			want: want(noSandbox),
		},
		{
			name: "OnFailure, both apps succeeded, sandbox still ready: kill the pod",
			in: Input{Pod: poTwo, Observed: obs(
				exited(0, app(poTwo, "a", 0)), exited(0, app(poTwo, "b", 0)),
			)},
			want: want(killPod),
		},
		{
			name: "OnFailure, one app succeeded, one runs: keep going",
			in: Input{Pod: poTwo, Observed: obs(
				exited(0, app(poTwo, "a", 0)), running(app(poTwo, "b", 0)),
			)},
			want: nothing,
		},
		{
			name: "Always never finishes",
			in: Input{Pod: newPod(always), Observed: Observed{
				Sandboxes: dead, Containers: []Container{exited(0, app(newPod(always), "app", 0))},
			}},
			want: want(newSandbox(2, true), start(0, 1)),
		},
	})
}

// TestRunningContainer: running containers are killed for a changed spec
// (and always restarted) or a failed probe (restarted by policy).
func TestRunningContainer(t *testing.T) {
	var cases []planCase
	for _, rp := range []corev1.RestartPolicy{always, onFailure, never} {
		p := newPod(rp)
		c := running(app(p, "app", 0))
		stale := withHash("stale", c)
		probeRestart := want(kill(c, ReasonLivenessFailed), start(0, 1))
		startupRestart := want(kill(c, ReasonStartupFailed), start(0, 1))
		if rp == never {
			// The only container is killed and not restarted: the pod is done.
			probeRestart, startupRestart = want(killPod), want(killPod)
		}
		cases = append(cases,
			planCase{string(rp) + "/spec changed", Input{Pod: p, Observed: obs(stale)}, want(kill(stale, ReasonSpecChanged), start(0, 1))},
			planCase{string(rp) + "/liveness failed", Input{Pod: p, Observed: obs(c), LivenessFailed: map[string]bool{c.ID: true}}, probeRestart},
			planCase{string(rp) + "/startup failed", Input{Pod: p, Observed: obs(c), StartupFailed: map[string]bool{c.ID: true}}, startupRestart},
			planCase{string(rp) + "/probe failure of another container ID", Input{Pod: p, Observed: obs(c), LivenessFailed: map[string]bool{"other": true}}, nothing},
		)
	}

	// Never with a second container that keeps running: only the failed one is killed.
	p := newPod(never, withApps("a", "b"))
	a, b := running(app(p, "a", 0)), running(app(p, "b", 0))
	cases = append(cases,
		planCase{"Never/liveness failed, other container runs", Input{Pod: p, Observed: obs(a, b), LivenessFailed: map[string]bool{a.ID: true}}, want(kill(a, ReasonLivenessFailed))},
		planCase{"Never/spec changed of one of two", Input{Pod: p, Observed: obs(a, withHash("stale", b))}, want(kill(withHash("stale", b), ReasonSpecChanged), start(1, 1))},
	)

	// A spec change beats a failed probe: restarted whatever the policy.
	pn := newPod(never)
	s := withHash("stale", running(app(pn, "app", 0)))
	cases = append(cases, planCase{"Never/spec changed and liveness failed", Input{Pod: pn, Observed: obs(s), LivenessFailed: map[string]bool{s.ID: true}}, want(kill(s, ReasonSpecChanged), start(0, 1))})

	// An exited container with a stale hash is handled by policy alone: a new
	// instance is built from the current spec anyway.
	pa := newPod(always)
	cases = append(cases, planCase{"Always/exited with stale hash", Input{Pod: pa, Observed: obs(withHash("stale", exited(0, app(pa, "app", 0))))}, want(start(0, 1))})
	run(t, cases)
}

// TestStrays covers containers that must stop whatever the spec says.
func TestStrays(t *testing.T) {
	p := newPod(always)
	old := running(app(p, "gone", 0)) // "gone" is not in the spec
	cur := running(app(p, "app", 1))
	olderDup := running(app(p, "app", 0))
	newerExited := exited(1, app(p, "app", 1))
	inOld := inSandbox("sb0", running(app(p, "app", 0)))
	pEph := newPod(always)
	pEph.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
	eph := running(Container{ID: "eph-debug", Name: "debug", Type: "ephemeral", SandboxID: curSB})
	ephGone := running(Container{ID: "eph-old", Name: "old-debug", Type: "ephemeral", SandboxID: curSB})
	wasInit := running(app(p, "i1", 0))
	wasInit.Type, wasInit.ID = "init", "init-i1-0"

	run(t, []planCase{
		{"removed container runs", Input{Pod: p, Observed: obs(cur, old)}, want(kill(old, ReasonNotInSpec))},
		{"removed container created", Input{Pod: p, Observed: obs(cur, created(app(p, "gone", 0)))}, want(kill(created(app(p, "gone", 0)), ReasonNotInSpec))},
		{"removed container exited: left to garbage collection", Input{Pod: p, Observed: obs(cur, exited(0, app(p, "gone", 0)))}, nothing},
		{"removed init container still running", Input{Pod: p, Observed: obs(cur, wasInit)}, want(kill(wasInit, ReasonNotInSpec))},
		{"two live instances: the older goes", Input{Pod: p, Observed: obs(cur, olderDup)}, want(kill(olderDup, ReasonDuplicate))},
		{"newest exited, older still runs: kill it, then restart by policy", Input{Pod: p, Observed: obs(newerExited, olderDup)}, want(kill(olderDup, ReasonDuplicate), start(0, 2))},
		{"older exited instances stay", Input{Pod: p, Observed: obs(cur, exited(0, app(p, "app", 0)))}, nothing},
		{"live container in an old sandbox: stop it, start it in the current one", Input{Pod: p, Observed: Observed{
			Sandboxes: []Sandbox{notReadySB("sb0", 0), readySB(curSB, 1)}, Containers: []Container{inOld},
		}}, want(kill(inOld, ReasonOldSandbox), start(0, 1))},
		{"ephemeral container in the spec is left alone", Input{Pod: pEph, Observed: obs(running(app(pEph, "app", 0)), eph)}, nothing},
		{"ephemeral container not in the spec is stopped", Input{Pod: pEph, Observed: obs(running(app(pEph, "app", 0)), ephGone)}, want(kill(ephGone, ReasonNotInSpec))},
	})
}

// TestNilPod: a nil pod is a caller's bug, never a panic.
func TestNilPod(t *testing.T) {
	got := ComputeActions(Input{})
	if got.NextInit != -1 || got.KillPod || got.CreateSandbox || got.Reason == "" {
		t.Errorf("ComputeActions(nil pod) = %+v", got)
	}
}
