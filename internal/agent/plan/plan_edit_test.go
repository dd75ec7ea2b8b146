package plan

import (
	"testing"
)

// TestEditedPod: crib keeps a pod's UID across manifest edits, so an
// instance made from an older version of the pod (another container hash,
// or a sandbox with another hash) does not count for the restart policy:
// an edited pod runs again, as an edited static pod does on the kubelet.
func TestEditedPod(t *testing.T) {
	dead := []Sandbox{notReadySB(curSB, 1)}
	readyOldHash := readySB(curSB, 1)
	readyOldHash.Hash = "old-hash"
	deadOldHash := notReadySB(curSB, 1)
	deadOldHash.Hash = "old-hash"

	pn := newPod(never)
	po := newPod(onFailure)
	pTwo := newPod(never, withApps("a", "b"))
	pni := newPod(never, withInit("i1"))
	pai := newPod(always, withInit("i1"))

	run(t, []planCase{
		{
			name: "Never, finished, app container edited: new sandbox, run it again",
			in:   Input{Pod: pn, Observed: Observed{Sandboxes: dead, Containers: []Container{withHash("old", exited(0, app(pn, "app", 0)))}}},
			want: want(newSandbox(2, true), start(0, 1)),
		},
		{
			name: "Never, finished, pod-level edit: new sandbox, run again",
			in:   Input{Pod: pn, Observed: Observed{Sandboxes: []Sandbox{deadOldHash}, Containers: []Container{exited(0, app(pn, "app", 0))}}},
			want: want(newSandbox(2, true), start(0, 1)),
		},
		{
			name: "Never, pod-level edit while the sandbox is still ready",
			in:   Input{Pod: pn, Observed: Observed{Sandboxes: []Sandbox{readyOldHash}, Containers: []Container{exited(0, app(pn, "app", 0))}}},
			want: want(newSandbox(2, true), start(0, 1)),
		},
		{
			name: "Never, pod-level edit, new sandbox ready: old instances are stale and run again",
			in: Input{Pod: pn, Observed: Observed{
				Sandboxes:  []Sandbox{deadOldHash, readySB("sb2", 2)},
				Containers: []Container{exited(0, app(pn, "app", 0))},
			}},
			want: want(func(a *Actions) { a.SandboxID = "sb2" }, start(0, 1)),
		},
		{
			name: "Never, finished, one of two edited: only that one runs again",
			in: Input{Pod: pTwo, Observed: Observed{Sandboxes: dead, Containers: []Container{
				exited(0, app(pTwo, "a", 0)), withHash("old", exited(0, app(pTwo, "b", 0))),
			}}},
			want: want(newSandbox(2, true), start(1, 1)),
		},
		{
			name: "Never, sandbox ready, edited container exited while another runs",
			in: Input{Pod: pTwo, Observed: obs(
				running(app(pTwo, "a", 0)), withHash("old", exited(1, app(pTwo, "b", 0))),
			)},
			want: want(start(1, 1)),
		},
		{
			name: "OnFailure, succeeded, edited: runs again",
			in:   Input{Pod: po, Observed: obs(withHash("old", exited(0, app(po, "app", 0))))},
			want: want(start(0, 1)),
		},
		{
			name: "OnFailure, succeeded, sandbox gone, edited: new sandbox, runs again",
			in:   Input{Pod: po, Observed: Observed{Sandboxes: dead, Containers: []Container{withHash("old", exited(0, app(po, "app", 0)))}}},
			want: want(newSandbox(2, true), start(0, 1)),
		},
		{
			name: "Never, init container failed, then edited: initialise again",
			in:   Input{Pod: pni, Observed: Observed{Sandboxes: dead, Containers: []Container{withHash("old", exited(1, initC(pni, "i1", 0)))}}},
			want: want(newSandbox(2, true), nextInit(0, 1)),
		},
		{
			name: "Never, init container failed, edited before the pod was stopped",
			in:   Input{Pod: pni, Observed: obs(withHash("old", exited(1, initC(pni, "i1", 0))))},
			want: want(newSandbox(2, true), nextInit(0, 1)),
		},
		{
			name: "Always, init container edited while the app runs: new sandbox, initialise again",
			in: Input{Pod: pai, Observed: obs(
				running(app(pai, "app", 0)), withHash("old", exited(0, initC(pai, "i1", 0))),
			)},
			want: want(newSandbox(2, true), nextInit(0, 1)),
		},
		{
			name: "Always, init container edited while it runs",
			in:   Input{Pod: pai, Observed: obs(withHash("old", running(initC(pai, "i1", 0))))},
			want: want(newSandbox(2, true), nextInit(0, 1)),
		},
		{
			name: "an instance whose sandbox is gone is judged by its own hash",
			in: Input{Pod: newPod(never, withApps("a", "b")), Observed: obs(
				running(app(pTwo, "a", 1)), inSandbox("removed", exited(0, app(pTwo, "b", 0))),
			)},
			want: nothing,
		},
	})
}
