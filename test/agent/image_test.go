package agenttest

import (
	"os"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// testPullNever: an absent image with pull policy Never waits with
// ErrImageNeverPull.
func testPullNever(t *testing.T, s *suite) {
	const name = "pull-never"
	app := s.env.shell("app", sleepForever)
	app.Image = "docker.io/library/crib-absent-image:v1"
	app.ImagePullPolicy = corev1.PullNever
	s.h.writePod(t, podSpec(name, app))
	p := s.h.waitFor(t, name, "ErrImageNeverPull", longWait, func(p *corev1.Pod) bool {
		return waitingReason(p, "app") == "ErrImageNeverPull"
	})
	if p.Status.Phase != corev1.PodPending {
		t.Errorf("phase %s, want Pending", p.Status.Phase)
	}
}

// testPullBackOff: an image that cannot be pulled gives ErrImagePull, then
// ImagePullBackOff.
func testPullBackOff(t *testing.T, s *suite) {
	const name = "pull-backoff"
	app := s.env.shell("app", sleepForever)
	app.Image = "127.0.0.1:1/nothing:v1"
	app.ImagePullPolicy = corev1.PullIfNotPresent
	s.h.writePod(t, podSpec(name, app))
	var reasons transitions
	p := s.h.waitFor(t, name, "ErrImagePull then ImagePullBackOff", longWait, func(p *corev1.Pod) bool {
		reasons.see(waitingReason(p, "app"))
		return reasons.has("ErrImagePull", "ImagePullBackOff")
	})
	if p.Status.Phase != corev1.PodPending {
		t.Errorf("phase %s, want Pending", p.Status.Phase)
	}
}

// testImageVolume: a pod mounts the test image as an image volume, whole
// and at a subPath; the container reads both and cannot write, and the
// runtime cannot remove the image while the pod runs.
func testImageVolume(t *testing.T, s *suite) {
	if os.Getenv(EndpointEnv) != "" {
		// containerd 1.6, the other runtime this suite drives, predates
		// KEP-4639 and takes an image mount for a host path of "".
		t.Skipf("%s is set: image volumes need a runtime that has them, as crib does", EndpointEnv)
	}
	const name = "image-volume"
	app := s.env.shell("app", `test -x /img/bin/busybox && echo whole=ok; `+
		`test -x /ibin/busybox && echo sub=ok; `+
		`touch /img/x 2>/dev/null || echo readonly=ok; `+sleepForever)
	app.VolumeMounts = []corev1.VolumeMount{
		{Name: "tools", MountPath: "/img"},
		{Name: "tools", MountPath: "/ibin", SubPath: "bin"},
	}
	pod := podSpec(name, app)
	pod.Spec.Volumes = []corev1.Volume{{Name: "tools", VolumeSource: corev1.VolumeSource{
		Image: &corev1.ImageVolumeSource{Reference: s.env.image, PullPolicy: corev1.PullIfNotPresent}}}}
	s.h.writePod(t, pod)
	p := s.h.waitFor(t, name, "app running", longWait, func(p *corev1.Pod) bool { return running(p, "app") })
	lines := waitLog(t, podLogDir(s.h.LogRoot, p)+"/app/0.log", "three checks", func(l []string) bool { return len(l) >= 3 })
	for _, want := range []string{"whole=ok", "sub=ok", "readonly=ok"} {
		if !contains(lines, want) {
			t.Errorf("app log %q lacks %q", lines, want)
		}
	}
	if s.env.daemon != nil {
		err := s.env.images.RemoveImage(rpcCtx(t), &runtimeapi.ImageSpec{Image: s.env.image})
		if status.Code(err) != codes.FailedPrecondition {
			t.Errorf("RemoveImage of the image a running pod mounts = %v, want FailedPrecondition", err)
		}
	}
	s.h.removePod(t, name)
	s.h.waitFor(t, name, "gone", longWait, func(p *corev1.Pod) bool { return p == nil })
}
