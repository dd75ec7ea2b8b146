package agenttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/mount"
)

// testSubPath: a container that plants a symlink to / in an emptyDir must
// not get the host's root mounted into a container that uses the symlink
// as its subPath (the kubelet's CVE-2017-1002101); that container waits
// with CreateContainerConfigError and is never created. A legitimate
// subPath, whose directories do not exist yet, is created and works, and
// its mounts go with the pod.
func testSubPath(t *testing.T, s *suite) {
	work := []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}

	const evil = "subpath-escape"
	plant := s.env.shell("plant", "ln -s / /work/evil && ln -s ../../../../../../.. /work/up")
	plant.VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
	victim := s.env.shell("app", "ls /host; "+sleepForever)
	victim.VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/host", SubPath: "evil"}}
	up := s.env.shell("up", "ls /host; "+sleepForever)
	up.VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/host", SubPathExpr: "$(UP)/etc"}}
	up.Env = []corev1.EnvVar{{Name: "UP", Value: "up"}}
	pod := podSpec(evil, victim, up)
	pod.Spec.InitContainers = []corev1.Container{plant}
	pod.Spec.Volumes = work
	s.h.writePod(t, pod)

	p := s.h.waitFor(t, evil, "app and up waiting with CreateContainerConfigError", longWait, func(p *corev1.Pod) bool {
		return waitingReason(p, "app") == "CreateContainerConfigError" && waitingReason(p, "up") == "CreateContainerConfigError"
	})
	for _, c := range []string{"app", "up"} {
		if msg := containerStatus(p, c).State.Waiting.Message; !strings.Contains(msg, "out of the volume") {
			t.Errorf("%s waits with %q, want the subPath refusal", c, msg)
		}
	}
	// The refusal comes before CreateContainer: neither was ever created.
	for _, c := range s.env.containers(t, string(p.UID), nil) {
		if name := c.GetMetadata().GetName(); name != "plant" {
			t.Errorf("container %s was created over a subPath symlink to /", name)
		}
	}
	if left, err := mount.Under(filepath.Join(s.h.Root, "pods", string(p.UID), "volume-subpaths")); err != nil || len(left) != 0 {
		t.Errorf("subPath mounts of the refused pod: %v (%v)", left, err)
	}

	const good = "subpath-ok"
	seed := s.env.shell("seed", "mkdir -p /work/logs/app && echo seeded > /work/logs/app/seed")
	seed.VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
	app := s.env.shell("app", `echo "seed=$(cat /logs/seed)"; echo mine > /mine/file && echo "wrote=$(cat /mine/file)"; `+sleepForever)
	app.Env = []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	app.VolumeMounts = []corev1.VolumeMount{
		{Name: "work", MountPath: "/logs", SubPath: "logs/app"},
		{Name: "work", MountPath: "/mine", SubPathExpr: "per-pod/$(POD)/data"},
	}
	ok := podSpec(good, app)
	ok.Spec.InitContainers = []corev1.Container{seed}
	ok.Spec.Volumes = work
	s.h.writePod(t, ok)
	p = s.h.waitFor(t, good, "app running", longWait, func(p *corev1.Pod) bool { return running(p, "app") })
	lines := waitLog(t, podLogDir(s.h.LogRoot, p)+"/app/0.log", "prints both subPaths", func(l []string) bool { return len(l) >= 2 })
	for _, want := range []string{"seed=seeded", "wrote=mine"} {
		if !contains(lines, want) {
			t.Errorf("app log %q lacks %q", lines, want)
		}
	}
	podDir := filepath.Join(s.h.Root, "pods", string(p.UID))
	made := filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "work", "per-pod", good, "data", "file")
	if b, err := os.ReadFile(made); err != nil || string(b) != "mine\n" {
		t.Errorf("file written through the subPathExpr mount: %q, %v", b, err)
	}
	if left, err := mount.Under(filepath.Join(podDir, "volume-subpaths")); err != nil || len(left) != 2 {
		t.Errorf("subPath mounts of the running pod: %v (%v), want 2", left, err)
	}

	// Both pods go, and their subPath mounts with them.
	s.h.removePod(t, evil)
	s.h.removePod(t, good)
	for _, name := range []string{evil, good} {
		s.h.waitFor(t, name, "gone", longWait, func(p *corev1.Pod) bool { return p == nil })
	}
	deadline := time.Now().Add(shortWait)
	for {
		_, err := os.Lstat(podDir)
		if os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			left, _ := mount.Under(podDir)
			t.Fatalf("pod directory %s still there (mounts %v, err %v)", podDir, left, err)
		}
		time.Sleep(pollEvery)
	}
}
