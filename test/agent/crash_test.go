package agenttest

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// stubbornForever keeps a container running and ignores SIGTERM, so that
// only the grace period's SIGKILL ends it.
const stubbornForever = "trap '' TERM; while true; do sleep 1; done"

// TestAgentKilledWithInProcessRuntime kills `crib agent` -- the agent and
// crib's runtime in one process, the default deployment -- with SIGKILL
// while it runs a ready pod and a crash-looping one. The containers live
// on under their monitors; a new `crib agent` adopts the ready pod as it
// was and carries the crash loop on. Removing the manifest then tears
// everything down, and nothing of crib is left once the agent stops.
func TestAgentKilledWithInProcessRuntime(t *testing.T) {
	a := newCribAgent(t)
	long := a.hostPod("long", "app", sleepForever)
	long.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: execAction("true")},
		PeriodSeconds: 1,
	}
	crash := a.hostPod("crash", "app", "exit 1")
	crash.Spec.RestartPolicy = corev1.RestartPolicyAlways
	a.writeObjects(t, "pods.yaml", long, crash)
	a.start(t)

	before := a.waitPods(t, "long running and ready, crash restarted", 2*longWait, func(pods map[string]*corev1.Pod) bool {
		return running(pods["long"], "app") && condition(pods["long"], corev1.PodReady) == corev1.ConditionTrue &&
			restarts(pods["crash"], "app") >= 1
	})
	longBefore := *containerStatus(before["long"], "app")
	crashBefore := restarts(before["crash"], "app")
	longUID := string(before["long"].UID)
	sandboxesBefore := readySandboxes(a.sandboxes(t, longUID))
	pid := a.containerPid(t, longBefore.ContainerID)

	a.kill9(t)
	if err := alive(pid); err != nil {
		t.Fatalf("the long pod's container (pid %d) did not outlive the agent: %v", pid, err)
	}
	t.Logf("container pid %d survived the agent; its parent is %s", pid, parentOf(pid))

	a.start(t)
	// Two more restarts: the new agent's first and one after its own
	// backoff.
	after := a.waitPods(t, "long ready again, crash restarted twice by the new agent", 2*longWait, func(pods map[string]*corev1.Pod) bool {
		if p := pods["crash"]; p != nil && restarts(p, "app") < crashBefore {
			t.Fatalf("crash: restart count went from %d to %d across the agent's SIGKILL", crashBefore, restarts(p, "app"))
		}
		return running(pods["long"], "app") && condition(pods["long"], corev1.PodReady) == corev1.ConditionTrue &&
			restarts(pods["crash"], "app") >= crashBefore+2
	})
	t.Logf("crash: %d restarts before the SIGKILL, %d after", crashBefore, restarts(after["crash"], "app"))
	longAfter := containerStatus(after["long"], "app")
	if longAfter.ContainerID != longBefore.ContainerID || longAfter.RestartCount != 0 ||
		!longAfter.State.Running.StartedAt.Equal(&longBefore.State.Running.StartedAt) {
		t.Errorf("long: was %s started %v restarts %d; after the SIGKILL %s started %v restarts %d",
			longBefore.ContainerID, longBefore.State.Running.StartedAt, longBefore.RestartCount,
			longAfter.ContainerID, longAfter.State.Running.StartedAt, longAfter.RestartCount)
	}
	if string(after["long"].UID) != longUID {
		t.Errorf("long: UID %s became %s", longUID, after["long"].UID)
	}
	if got := readySandboxes(a.sandboxes(t, longUID)); len(got) != 1 || got[0] != sandboxesBefore[0] {
		t.Errorf("long: ready sandboxes %v after the SIGKILL, want %v", got, sandboxesBefore)
	}
	if got := a.containerPid(t, longBefore.ContainerID); got != pid {
		t.Errorf("long: the runtime reports pid %d after the SIGKILL, was %d", got, pid)
	}
	if n := len(a.containers(t, longUID)); n != 1 {
		t.Errorf("long: the runtime holds %d containers, want 1", n)
	}

	a.removeFile(t, "pods.yaml")
	a.assertTornDown(t)
	a.stopAndCheckLeaks(t)
}

// TestAgentKilledMidTeardown kills `crib agent` with SIGKILL while it waits
// out the grace period of a container that ignores SIGTERM, whose manifest
// was removed. The next `crib agent` finishes the teardown, and nothing of
// crib is left.
func TestAgentKilledMidTeardown(t *testing.T) {
	a := newCribAgent(t)
	pod := a.hostPod("stubborn", "app", stubbornForever)
	grace := int64(30)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	a.writeObjects(t, "stubborn.yaml", pod)
	a.start(t)
	p := a.waitPods(t, "stubborn running", longWait, func(pods map[string]*corev1.Pod) bool {
		return running(pods["stubborn"], "app")
	})["stubborn"]
	id := containerStatus(p, "app").ContainerID
	pid := a.containerPid(t, id)

	a.removeFile(t, "stubborn.yaml")
	a.waitPods(t, "stubborn terminating", shortWait, func(pods map[string]*corev1.Pod) bool {
		return pods["stubborn"] == nil || pods["stubborn"].DeletionTimestamp != nil
	})
	// The agent is now stopping the container (the status API lists the
	// pod until its teardown is done); the grace period is far from over a
	// second later.
	time.Sleep(time.Second)
	st, err := a.rt.ContainerStatus(rpcCtx(t), trimScheme(id), false)
	if err != nil {
		t.Fatalf("status of the stubborn container mid-grace: %v", err)
	}
	if s := st.GetStatus().GetState(); s != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("the stubborn container is %s one second into a %d s grace period", s, grace)
	}

	a.kill9(t)
	// The container belongs to the runtime, not to the agent that drives
	// it: killing the agent mid-grace must not end it.
	if err := alive(pid); err != nil {
		t.Errorf("the stubborn container (pid %d) did not outlive the agent: %v", pid, err)
	}
	a.start(t)
	begin := time.Now()
	a.assertTornDown(t)
	t.Logf("the new agent finished the teardown in %s", time.Since(begin).Round(time.Second))
	a.stopAndCheckLeaks(t)
}
