package agenttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// testLiveness: a liveness probe that starts failing restarts the
// container.
func testLiveness(t *testing.T, s *suite) {
	const name = "liveness"
	app := s.env.shell("app", "touch /tmp/alive; sleep 3; rm /tmp/alive; "+sleepForever)
	app.LivenessProbe = &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{Exec: execAction("test", "-f", "/tmp/alive")},
		PeriodSeconds:    1,
		FailureThreshold: 1,
		SuccessThreshold: 1,
		TimeoutSeconds:   1,
	}
	s.h.writePod(t, podSpec(name, app))
	p := s.h.waitFor(t, name, "restarted by its liveness probe", longWait, func(p *corev1.Pod) bool {
		return restarts(p, "app") >= 1
	})
	if last := containerStatus(p, "app").LastTerminationState.Terminated; last == nil {
		t.Errorf("no last termination state after a liveness restart: %s", describe(p))
	}
}

// testReadiness: a readiness probe over a file the container creates and
// removes flips the pod's Ready condition False, True, False.
func testReadiness(t *testing.T, s *suite) {
	const name = "readiness"
	app := s.env.shell("app", "sleep 2; touch /tmp/ready; sleep 4; rm /tmp/ready; "+sleepForever)
	app.ReadinessProbe = &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{Exec: execAction("test", "-f", "/tmp/ready")},
		PeriodSeconds:    1,
		FailureThreshold: 1,
		SuccessThreshold: 1,
		TimeoutSeconds:   5, // an exec can take seconds on a loaded, emulated host
	}
	s.h.writePod(t, podSpec(name, app))
	var ready, containersReady transitions
	p := s.h.waitFor(t, name, "Ready False, True, False", longWait, func(p *corev1.Pod) bool {
		ready.see(string(condition(p, corev1.PodReady)))
		containersReady.see(string(condition(p, corev1.ContainersReady)))
		return ready.has("False", "True", "False")
	})
	if !containersReady.has("False", "True", "False") {
		t.Errorf("ContainersReady went %v, want False, True, False", containersReady)
	}
	if !running(p, "app") || restarts(p, "app") != 0 {
		t.Errorf("a readiness failure must not restart: %s", describe(p))
	}
}

// testHooks: postStart runs inside the container (the app waits for its
// file), preStop runs before the container is stopped when the manifest
// goes (it writes to a hostPath the test reads).
func testHooks(t *testing.T, s *suite) {
	const name = "hooks"
	host := filepath.Join(t.TempDir(), "hooks") // created by DirectoryOrCreate
	app := s.env.shell("app", "while [ ! -f /tmp/poststart ]; do sleep 0.2; done; echo poststart ran; "+
		"trap 'echo term >> /host/order; exit 0' TERM; while true; do sleep 1; done")
	app.Lifecycle = &corev1.Lifecycle{
		PostStart: &corev1.LifecycleHandler{Exec: execAction("sh", "-c", "echo ok > /tmp/poststart")},
		PreStop:   &corev1.LifecycleHandler{Exec: execAction("sh", "-c", "echo prestop ran > /host/prestop; echo prestop >> /host/order")},
	}
	app.VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/host"}}
	pod := podSpec(name, app)
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	pod.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: host, Type: &dirOrCreate},
	}}}
	s.h.writePod(t, pod)
	p := s.h.waitFor(t, name, "app running", longWait, func(p *corev1.Pod) bool { return running(p, "app") })
	waitLog(t, podLogDir(s.h.LogRoot, p)+"/app/0.log", "postStart ran", func(l []string) bool {
		return contains(l, "poststart ran")
	})
	if restarts(p, "app") != 0 {
		t.Errorf("app restarted: %s", describe(p))
	}

	s.h.removePod(t, name)
	s.h.waitFor(t, name, "gone", longWait, func(p *corev1.Pod) bool { return p == nil })
	b, err := os.ReadFile(filepath.Join(host, "prestop"))
	if err != nil {
		t.Fatalf("preStop hook left nothing: %v", err)
	}
	if got := strings.TrimSpace(string(b)); got != "prestop ran" {
		t.Errorf("preStop wrote %q, want %q", got, "prestop ran")
	}
	// The preStop hook ran to its end before the container got SIGTERM.
	b, err = os.ReadFile(filepath.Join(host, "order"))
	if err != nil {
		t.Fatalf("order of preStop and SIGTERM: %v", err)
	}
	if got := strings.Fields(string(b)); strings.Join(got, ",") != "prestop,term" {
		t.Errorf("preStop and SIGTERM came as %v, want [prestop term]", got)
	}
}
