package agenttest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// testTeardown: a removed manifest stops and removes the pod: its
// containers and sandbox, its log directory and its volume directory.
func testTeardown(t *testing.T, s *suite) {
	const name = "teardown"
	app := s.env.shell("app", "echo hello > /data/f; "+sleepForever)
	app.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pod := podSpec(name, app)
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	s.h.writePod(t, pod)
	p := s.h.waitFor(t, name, "running", longWait, func(p *corev1.Pod) bool { return running(p, "app") })
	uid := string(p.UID)
	logDir := podLogDir(s.h.LogRoot, p)
	volDir := filepath.Join(s.h.Root, "pods", uid)
	for _, d := range []string{logDir, volDir} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("a running pod's directory: %v", err)
		}
	}
	if n := len(s.env.sandboxes(t, uid)); n != 1 {
		t.Fatalf("%d sandboxes of a running pod, want 1", n)
	}

	s.h.removePod(t, name)
	s.h.waitFor(t, name, "gone from the store", longWait, func(p *corev1.Pod) bool { return p == nil })
	deadline := time.Now().Add(shortWait)
	for {
		sbs, ctrs := s.env.sandboxes(t, uid), s.env.containers(t, uid, nil)
		_, logErr := os.Stat(logDir)
		_, volErr := os.Stat(volDir)
		if len(sbs) == 0 && len(ctrs) == 0 && os.IsNotExist(logErr) && os.IsNotExist(volErr) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after teardown: %d sandboxes, %d containers, log dir: %v, volume dir: %v",
				len(sbs), len(ctrs), logErr, volErr)
		}
		time.Sleep(pollEvery)
	}
	if _, ok := s.h.Store().Lookup("default", name); ok {
		t.Errorf("the store lists the pod again after teardown")
	}
}

// testAdopt: an agent restarted on the same runtime adopts the running
// pod: same containers, same start time, no restart. What changed while
// no agent ran is acted on: a pod whose manifest went is torn down, an
// edited pod's container is replaced, and a crash-looping container's
// restart count carries on from where it was.
func testAdopt(t *testing.T, s *suite) {
	const name, gone, edited, crash = "adopt", "gone-while-down", "edited-while-down", "crash-while-down"
	init := s.env.shell("init", "true")
	pod := podSpec(name, s.env.shell("app", sleepForever), s.env.shell("side", sleepForever))
	pod.Spec.InitContainers = []corev1.Container{init}
	s.h.writePod(t, pod)
	s.h.writePod(t, podSpec(gone, s.env.shell("app", sleepForever)))
	editedPod := podSpec(edited, s.env.shell("app", "echo v1; "+sleepForever))
	s.h.writePod(t, editedPod)
	s.h.writePod(t, podSpec(crash, s.env.shell("app", "exit 1")))

	before := s.h.waitFor(t, name, "running", longWait, func(p *corev1.Pod) bool {
		return running(p, "app") && running(p, "side")
	})
	goneBefore := s.h.waitFor(t, gone, "running", longWait, func(p *corev1.Pod) bool { return running(p, "app") })
	editedBefore := s.h.waitFor(t, edited, "running", longWait, func(p *corev1.Pod) bool { return running(p, "app") })
	crashBefore := restarts(s.h.waitFor(t, crash, "restarted twice", longWait, func(p *corev1.Pod) bool {
		return restarts(p, "app") >= 2
	}), "app")
	uid := string(before.UID)
	sandboxes := readySandboxes(s.env.sandboxes(t, uid))

	s.h.stop()
	s.h.removePod(t, gone)
	editedPod.Spec.Containers[0].Command = []string{"sh", "-c", "echo v2; " + sleepForever}
	s.h.writePod(t, editedPod)
	s.h.start()

	s.h.waitFor(t, name, "known to the new agent", longWait, func(p *corev1.Pod) bool {
		return running(p, "app") && running(p, "side")
	})
	// Let the new agent relist and resync a few times.
	time.Sleep(4 * time.Second)
	after := s.h.waitFor(t, name, "running", shortWait, func(p *corev1.Pod) bool {
		return running(p, "app") && running(p, "side")
	})
	for _, c := range []string{"init", "app", "side"} {
		b, a := containerStatus(before, c), containerStatus(after, c)
		if a == nil {
			t.Errorf("%s: no status after the restart", c)
			continue
		}
		if a.ContainerID != b.ContainerID || a.RestartCount != b.RestartCount {
			t.Errorf("%s: was %s restarts %d, now %s restarts %d", c, b.ContainerID, b.RestartCount, a.ContainerID, a.RestartCount)
		}
		if b.State.Running != nil && (a.State.Running == nil || !a.State.Running.StartedAt.Equal(&b.State.Running.StartedAt)) {
			t.Errorf("%s: started at %v, now %+v", c, b.State.Running.StartedAt, a.State)
		}
	}
	if got := readySandboxes(s.env.sandboxes(t, uid)); len(got) != 1 || got[0] != sandboxes[0] {
		t.Errorf("sandboxes %v after the restart, want %v", got, sandboxes)
	}
	if n := len(s.env.containers(t, uid, nil)); n != 3 {
		t.Errorf("runtime holds %d containers of the pod, want 3 (init, app, side)", n)
	}

	// The pod whose manifest went while no agent ran is torn down.
	s.h.waitFor(t, gone, "not in the store", shortWait, func(p *corev1.Pod) bool { return p == nil })
	deadline := time.Now().Add(shortWait)
	for uid := string(goneBefore.UID); len(s.env.sandboxes(t, uid))+len(s.env.containers(t, uid, nil)) > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%s: runtime still holds sandboxes %v, containers %v", gone,
				readySandboxes(s.env.sandboxes(t, uid)), ctrIDs(s.env.containers(t, uid, nil)))
		}
		time.Sleep(pollEvery)
	}

	// The pod edited while no agent ran gets the new container.
	oldID := containerStatus(editedBefore, "app").ContainerID
	p := s.h.waitFor(t, edited, "replaced", longWait, func(p *corev1.Pod) bool {
		st := containerStatus(p, "app")
		return st != nil && st.State.Running != nil && st.ContainerID != oldID
	})
	logs := containerLogs(s.h.LogRoot, p, "app")
	if len(logs) == 0 {
		t.Fatalf("%s: no logs", edited)
	}
	waitLog(t, logs[len(logs)-1], "says v2", func(l []string) bool { return contains(l, "v2") })
	if n := len(s.env.containers(t, string(p.UID), ptr(runtimeapi.ContainerState_CONTAINER_RUNNING))); n != 1 {
		t.Errorf("%s: %d running containers, want 1", edited, n)
	}

	// The crash-looping container's count carries on.
	s.h.waitFor(t, crash, "restart count beyond the old agent's", longWait, func(p *corev1.Pod) bool {
		if r := restarts(p, "app"); p != nil && r < crashBefore {
			t.Fatalf("%s: restart count went from %d to %d across the agent restart", crash, crashBefore, r)
		}
		return restarts(p, "app") > crashBefore
	})
}
