package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The kubelet's reasons for a container waiting on its image.
const (
	reasonErrImagePull      = "ErrImagePull"
	reasonImagePullBackOff  = "ImagePullBackOff"
	reasonErrImageNeverPull = "ErrImageNeverPull"
)

// errWaiting is a container that cannot start now for a reason that is
// already recorded as its waiting state.
var errWaiting = errors.New("container is waiting")

// ensureImage makes the container's image present as its pull policy says
// and returns the runtime's record of it.
func (m *Manager) ensureImage(ctx context.Context, env startEnv, c *corev1.Container) (*runtimeapi.Image, error) {
	pod := env.pod
	spec := &runtimeapi.ImageSpec{Image: c.Image, Annotations: env.sandboxConfig.GetAnnotations()}
	present, err := m.imageStatus(ctx, spec)
	if err != nil {
		return nil, err
	}
	switch {
	case c.ImagePullPolicy == corev1.PullNever && present == nil:
		msg := fmt.Sprintf("image %q is not present and the pull policy is Never", c.Image)
		env.waiting.wait(c.Name, reasonErrImageNeverPull, msg)
		m.cfg.Recorder.Event(pod, corev1.EventTypeWarning, reasonErrImageNeverPull, msg)
		return nil, fmt.Errorf("%s: %w", msg, errWaiting)
	case present != nil && c.ImagePullPolicy != corev1.PullAlways:
		m.cfg.Recorder.Event(pod, corev1.EventTypeNormal, "Pulled", fmt.Sprintf("Container image %q already present on machine", c.Image))
		return present, nil
	}

	key := string(pod.UID) + "/" + c.Image
	if in, left := m.cfg.PullBackoff.InBackoff(key); in {
		msg := fmt.Sprintf("Back-off pulling image %q (%s left)", c.Image, left.Round(time.Second))
		env.waiting.wait(c.Name, reasonImagePullBackOff, msg)
		m.cfg.Recorder.Event(pod, corev1.EventTypeNormal, "BackOff", msg)
		return nil, &waitError{msg: msg, left: left}
	}
	m.cfg.Recorder.Event(pod, corev1.EventTypeNormal, "Pulling", fmt.Sprintf("Pulling image %q", c.Image))
	began := m.cfg.Clock.Now()
	ended := func() {}
	if m.cfg.Pulling != nil {
		ended = m.cfg.Pulling(pod, c.Name, c.Image)
	}
	ref, err := m.cfg.Images.PullImage(ctx, spec, pullAuth(pod, c.Image, env.data.Secrets), env.sandboxConfig)
	ended()
	if err != nil {
		m.cfg.PullBackoff.Next(key)
		msg := fmt.Sprintf("Failed to pull image %q: %v", c.Image, err)
		env.waiting.wait(c.Name, reasonErrImagePull, msg)
		m.cfg.Recorder.Event(pod, corev1.EventTypeWarning, "Failed", msg)
		return nil, fmt.Errorf("pull image %q: %w", c.Image, fromGRPC(err))
	}
	m.cfg.PullBackoff.Reset(key)
	m.cfg.Recorder.Event(pod, corev1.EventTypeNormal, "Pulled",
		fmt.Sprintf("Successfully pulled image %q in %s", c.Image, m.cfg.Clock.Since(began).Round(time.Millisecond)))
	img, err := m.imageStatus(ctx, &runtimeapi.ImageSpec{Image: ref})
	if err != nil {
		return nil, err
	}
	if img == nil {
		return nil, fmt.Errorf("image %q is gone right after its pull", c.Image)
	}
	return img, nil
}

// imageStatus returns the runtime's record of an image, or nil if absent.
func (m *Manager) imageStatus(ctx context.Context, spec *runtimeapi.ImageSpec) (*runtimeapi.Image, error) {
	resp, err := m.cfg.Images.ImageStatus(ctx, spec, false)
	if err != nil {
		return nil, fmt.Errorf("image status %q: %w", spec.Image, fromGRPC(err))
	}
	return resp.GetImage(), nil
}
