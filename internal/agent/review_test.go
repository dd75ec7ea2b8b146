package agent

// Reproductions found in review. Each test is skipped with the bug it
// shows; remove the t.Skip once the bug is fixed.

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

// TestReviewRejectedPodShowsRunningAfterEdit: a pod rejected for
// OutOfcpu is stored as Failed; after its manifest is fixed it is admitted
// and its container runs, but status.Compute keeps a terminal Previous
// phase ("a finished pod stays finished") and copies Previous.Reason when
// the phases agree, so /pods shows Failed/OutOfcpu for a running pod
// forever. The same holds for Evicted pods and for a Succeeded/Failed pod
// whose manifest edit re-runs it (crib keeps UIDs across edits; the
// kubelet's edited static pod gets a new UID and a fresh status).
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

// TestReviewFinishedPodEditedRunsAgainAndSaysSo is the same bug for a
// completed pod: the plan re-runs it after an edit (stale instance) but
// the phase stays Succeeded.
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

// TestReviewTerminateRacingReAddKeepsFirstSeen: terminate() used to clear
// the pod's spec, firstSeen, start measurement and admission *after*
// TerminatePod returned, without checking that the pod is still unwanted.
// When the manifest comes back while the teardown runs, apply() records
// firstSeen and the spec, and terminate then wiped them: the re-added pod
// had no StartTime and its start latency was measured from the zero time
// (an observation of ~2000 years in the histogram). Shown here by calling
// the two halves in the racing order directly.
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
	a.mu.Lock()
	rec := a.recordOf(uid)
	rec.phase = phaseSyncing
	rec.spec = pod
	rec.firstSeen = f.clk.Now()
	a.mu.Unlock()
	// terminate's bookkeeping after TerminatePod returned:
	pr, err := a.rt.ObservePod(t.Context(), uid, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.terminate(t.Context(), uid, pod, pr)
	a.mu.Lock()
	rec = a.pods[uid]
	seen := rec != nil && !rec.firstSeen.IsZero()
	known := rec != nil && rec.spec != nil
	a.mu.Unlock()
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
// port 8080; one is admitted, the other rejected. A restarted agent admits
// in whatever order the pod workers happen to call admit(), ignoring which
// pod the runtime already runs, so a restart can admit the rejected pod and
// keepRejected then kills the running one (adoption promise broken). The
// kubelet admits in a stable order (by creation time) on restart. Fix: on
// a fresh agent, admit pods that already have live containers first (e.g.
// seed `admitted` from the first relist), or sort by a stable key.
// Nondeterministic by nature; ten restarts make a pass by luck ~1/1000.
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
