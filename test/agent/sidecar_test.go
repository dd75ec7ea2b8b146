package agenttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// testSidecar: a native sidecar (an init container with restartPolicy
// Always) starts first and keeps running beside the app, which waits for
// the sidecar's file in a shared emptyDir; the pod is Running and
// Initialized with both running and the sidecar Ready by its readiness
// probe. Killed from inside (SIGUSR1 to its PID 1 over the CRI's exec),
// the sidecar is restarted under restartPolicy Never while the app keeps
// running. When the manifest goes, the app stops before the sidecar.
func testSidecar(t *testing.T, s *suite) {
	const name = "sidecar"
	host := filepath.Join(t.TempDir(), "sidecar") // created by DirectoryOrCreate
	work := corev1.VolumeMount{Name: "work", MountPath: "/work"}
	hostMount := corev1.VolumeMount{Name: "host", MountPath: "/host"}

	side := s.env.shell("side", "echo up >> /work/ready; "+
		"trap 'exit 3' USR1; trap 'echo side >> /host/order; exit 0' TERM; while true; do sleep 1; done")
	side.RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
	side.VolumeMounts = []corev1.VolumeMount{work, hostMount}
	side.ReadinessProbe = &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{Exec: execAction("test", "-f", "/work/ready")},
		PeriodSeconds:    1,
		FailureThreshold: 1,
		SuccessThreshold: 1,
		TimeoutSeconds:   5, // an exec can take seconds on a loaded, emulated host
	}
	app := s.env.shell("app", "while [ ! -f /work/ready ]; do sleep 0.2; done; echo saw sidecar; "+
		"trap 'echo app >> /host/order; exit 0' TERM; while true; do sleep 1; done")
	app.VolumeMounts = []corev1.VolumeMount{work, hostMount}

	pod := podSpec(name, app)
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod.Spec.InitContainers = []corev1.Container{side}
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: host, Type: &dirOrCreate}}},
	}
	s.h.writePod(t, pod)

	p := s.h.waitFor(t, name, "app and sidecar running, sidecar ready", longWait, func(p *corev1.Pod) bool {
		st := containerStatus(p, "side")
		return running(p, "app") && running(p, "side") && st.Ready && condition(p, corev1.PodReady) == corev1.ConditionTrue
	})
	if p.Status.Phase != corev1.PodRunning || condition(p, corev1.PodInitialized) != corev1.ConditionTrue {
		t.Errorf("phase %s, Initialized %q: want Running and True: %s", p.Status.Phase, condition(p, corev1.PodInitialized), describe(p))
	}
	if st := containerStatus(p, "side"); st.Started == nil || !*st.Started {
		t.Errorf("sidecar status not started: %+v", st)
	}
	waitLog(t, podLogDir(s.h.LogRoot, p)+"/app/0.log", "app saw the sidecar's file", func(l []string) bool {
		return contains(l, "saw sidecar")
	})
	appID := containerStatus(p, "app").ContainerID
	sideID := containerStatus(p, "side").ContainerID

	// The sidecar exits (code 3); the agent starts it again whatever the
	// pod's restart policy.
	if _, _, err := s.env.rt.ExecSync(rpcCtx(t), trimScheme(sideID), []string{"kill", "-USR1", "1"}, 10*time.Second); err != nil {
		t.Fatalf("exec kill in the sidecar: %v", err)
	}
	p = s.h.waitFor(t, name, "sidecar restarted", longWait, func(p *corev1.Pod) bool {
		st := containerStatus(p, "side")
		return st != nil && st.RestartCount >= 1 && running(p, "side") && st.ContainerID != sideID
	})
	if last := containerStatus(p, "side").LastTerminationState.Terminated; last == nil || last.ExitCode != 3 {
		t.Errorf("sidecar's last termination = %+v, want exit code 3", last)
	}
	if st := containerStatus(p, "app"); st.ContainerID != appID || st.RestartCount != 0 || !running(p, "app") {
		t.Errorf("app did not keep running through the sidecar's restart: %s", describe(p))
	}
	b, err := os.ReadFile(filepath.Join(host, "order"))
	if err == nil && len(b) > 0 {
		t.Errorf("something was stopped with SIGTERM during the sidecar's restart: %q", b)
	}

	// Teardown stops the app first, then the sidecar.
	s.h.removePod(t, name)
	s.h.waitFor(t, name, "gone", longWait, func(p *corev1.Pod) bool { return p == nil })
	b, err = os.ReadFile(filepath.Join(host, "order"))
	if err != nil {
		t.Fatalf("order of the teardown: %v", err)
	}
	if got := strings.Fields(string(b)); strings.Join(got, ",") != "app,side" {
		t.Errorf("teardown stopped %v, want [app side]", got)
	}
}
