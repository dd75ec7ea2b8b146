package agenttest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
// pod: same containers, same start time, no restart.
func testAdopt(t *testing.T, s *suite) {
	const name = "adopt"
	init := s.env.shell("init", "true")
	pod := podSpec(name, s.env.shell("app", sleepForever), s.env.shell("side", sleepForever))
	pod.Spec.InitContainers = []corev1.Container{init}
	s.h.writePod(t, pod)
	before := s.h.waitFor(t, name, "running", longWait, func(p *corev1.Pod) bool {
		return running(p, "app") && running(p, "side")
	})
	uid := string(before.UID)
	sandboxes := readySandboxes(s.env.sandboxes(t, uid))

	s.h.restart()
	// Let the new agent relist and resync a few times.
	s.h.waitFor(t, name, "known to the new agent", longWait, func(p *corev1.Pod) bool {
		return running(p, "app") && running(p, "side")
	})
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
}
