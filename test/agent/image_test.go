package agenttest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
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
