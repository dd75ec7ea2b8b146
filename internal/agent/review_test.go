package agent

// Regression tests of bugs found in review, all fixed: each drives the case
// that showed its bug and checks that the agent now does what the kubelet
// does.

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/crib-dev/crib/internal/agent/source"
)

const bigPod = `apiVersion: v1
kind: Pod
metadata:
  name: big
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
    resources:
      requests:
        cpu: "2"
`

// TestReviewRejectedPodShowsRunningAfterEdit: a pod rejected for OutOfcpu
// is Failed; once its manifest is fixed it is admitted, its container runs,
// and /pods shows it Running with no reason. podstatus.Compute keeps a
// terminal phase ("a finished pod stays finished"), so a new version of a
// pod starts its status over (podRecord.fresh): crib keeps a pod's UID
// across edits, where the kubelet's edited static pod gets a new UID and a
// fresh status.
func TestReviewRejectedPodShowsRunningAfterEdit(t *testing.T) {
	f := newRuntimeFakes(t)
	r := f.startConfigured(t, f.rt, func(c *Config) { c.PodConfig.NodeMilliCPU = 1000 })
	snap := loadPods(t, bigPod)
	pod := podNamed(t, snap, "big")
	r.send(t, snap)
	waitFor(t, "the pod rejected", func() bool {
		st, ok := r.a.Store().Get(pod.UID)
		return ok && st.Status.Phase == corev1.PodFailed && st.Status.Reason == "OutOfcpu"
	})
	r.idle(t, pod)

	fixed := pod.DeepCopy()
	fixed.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("500m")
	snap2 := snap
	snap2.Pods = []*corev1.Pod{fixed}
	r.send(t, snap2)
	waitFor(t, "the fixed pod's container running", func() bool {
		c, ok := containerStatus(r, fixed, "app")
		return ok && c.State.Running != nil
	})
	r.idle(t, fixed)
	st, _ := r.a.Store().Get(fixed.UID)
	if st.Status.Phase != corev1.PodRunning || st.Status.Reason != "" {
		t.Errorf("fixed pod runs but its status is phase=%s reason=%q, want Running and no reason", st.Status.Phase, st.Status.Reason)
	}
}

const completedPod = `apiVersion: v1
kind: Pod
metadata:
  name: job
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: busybox:1.36
    command: [sh, -c, "exit 0"]
`

// TestReviewFinishedPodEditedRunsAgainAndSaysSo is the same for a
// completed pod: an edit re-runs it (its instance is stale) and its phase
// is Running again, not Succeeded.
func TestReviewFinishedPodEditedRunsAgainAndSaysSo(t *testing.T) {
	f := newRuntimeFakes(t)
	r := f.start(t)
	snap := loadPods(t, completedPod)
	pod := podNamed(t, snap, "job")
	r.send(t, snap)
	r.waitRunning(t, f, pod)
	f.exitContainer(t, string(pod.UID), 0)
	f.clk.Step(time.Second)
	waitFor(t, "Succeeded", func() bool {
		st, ok := r.a.Store().Get(pod.UID)
		return ok && st.Status.Phase == corev1.PodSucceeded
	})
	r.idle(t, pod)

	edited := pod.DeepCopy()
	edited.Spec.Containers[0].Command = []string{"sleep", "3600"}
	r.send(t, source.Snapshot{Pods: []*corev1.Pod{edited}})
	waitFor(t, "the edited container running", func() bool {
		c, ok := containerStatus(r, edited, "app")
		return ok && c.State.Running != nil
	})
	r.idle(t, edited)
	st, _ := r.a.Store().Get(edited.UID)
	if st.Status.Phase != corev1.PodRunning {
		t.Errorf("edited pod runs again but its phase is %s, want Running", st.Status.Phase)
	}
}

// TestReviewTerminateRacingReAddKeepsFirstSeen: when a pod's manifest
// comes back while its teardown runs, the re-added pod keeps the firstSeen
// and spec recorded for it: terminate's bookkeeping after TerminatePod
// (tornDown) leaves a wanted pod's record alone. (It used to clear them,
// and the re-added pod had no StartTime and a start latency measured from
// the zero time.) The test calls the two halves in the racing order
// directly.
func TestReviewTerminateRacingReAddKeepsFirstSeen(t *testing.T) {
	f := newRuntimeFakes(t)
	r := f.start(t)
	snap := loadPods(t, completedPod)
	pod := podNamed(t, snap, "job")
	r.send(t, snap)
	r.waitRunning(t, f, pod)
	r.stop()

	a := r.a
	uid := string(pod.UID)
	// The worker found the pod terminating and is in TerminatePod;
	// meanwhile the manifest returns.
	a.table.mu.Lock()
	rec := a.table.recordOf(uid)
	rec.phase = phaseSyncing
	rec.spec = pod
	rec.firstSeen = f.clk.Now()
	a.table.mu.Unlock()
	// terminate's bookkeeping after TerminatePod returned:
	pr, err := a.rt.ObservePod(t.Context(), uid, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.terminate(t.Context(), podRecord{uid: uid, phase: phaseTerminating, spec: pod, runtime: pr, status: &corev1.PodStatus{}})
	after, ok := a.table.snapshot(uid)
	seen := ok && !after.firstSeen.IsZero()
	known := ok && after.spec != nil
	if !seen || !known {
		t.Errorf("after a teardown raced with a re-add: firstSeen kept=%v known kept=%v, want both", seen, known)
	}
}

const portPods = `apiVersion: v1
kind: Pod
metadata:
  name: first
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
    ports:
    - containerPort: 80
      hostPort: 8080
---
apiVersion: v1
kind: Pod
metadata:
  name: second
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
    ports:
    - containerPort: 80
      hostPort: 8080
`

// TestReviewAdmissionAfterRestartKeepsTheRunningPod: two pods want host
// port 8080; one is admitted, the other rejected. Across ten agent
// restarts the pod that runs stays the one that ran: a restarted agent
// counts a pod its first relist finds running as admitted already, ahead of
// the others, whatever order the pod workers call admit() in. (It
// used to admit in the workers' order, so a restart could admit the
// rejected pod and kill the running one.) Were the order left to chance,
// ten restarts would all pass about once in a thousand runs.
func TestReviewAdmissionAfterRestartKeepsTheRunningPod(t *testing.T) {
	f := newRuntimeFakes(t)
	snap := loadPods(t, portPods)
	first, second := podNamed(t, snap, "first"), podNamed(t, snap, "second")
	runningPod := func() string {
		_, _, a := f.podObjects(string(first.UID))
		_, _, b := f.podObjects(string(second.UID))
		switch {
		case a == 1 && b == 0:
			return "first"
		case a == 0 && b == 1:
			return "second"
		}
		return fmt.Sprintf("first=%d second=%d", a, b)
	}
	r := f.start(t)
	r.send(t, snap)
	waitFor(t, "one pod admitted", func() bool {
		_, okA := r.a.Store().Get(first.UID)
		_, okB := r.a.Store().Get(second.UID)
		return okA && okB
	})
	r.idle(t, first, second)
	was := runningPod()
	r.stop()
	for i := 0; i < 10; i++ {
		r := f.start(t)
		r.send(t, snap)
		waitFor(t, "both pods synced", func() bool {
			_, okA := r.a.Store().Get(first.UID)
			_, okB := r.a.Store().Get(second.UID)
			return okA && okB
		})
		r.idle(t, first, second)
		if now := runningPod(); now != was {
			t.Fatalf("restart %d: running pod was %s, now %s", i+1, was, now)
		}
		r.stop()
	}
}
