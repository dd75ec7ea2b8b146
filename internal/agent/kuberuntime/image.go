package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crierrors "k8s.io/cri-api/pkg/errors"
)

// The kubelet's reasons for a container waiting on its image.
const (
	reasonErrImagePull      = "ErrImagePull"
	reasonImagePullBackOff  = "ImagePullBackOff"
	reasonErrImageNeverPull = "ErrImageNeverPull"
)

// pullFailure words a failed pull as the kubelet's image manager does:
// the container's waiting reason and message, and the message of the pod's
// Failed event. A runtime status message that starts with the CRI's
// SignatureValidationFailed is that reason, the waiting message "image pull
// failed for REF because the signature validation failed: ..." and the
// event "Failed to pull image "REF": SignatureValidationFailed: ...";
// anything else is ErrImagePull.
func pullFailure(ref string, err error) (reason, waiting, event string) {
	text := err.Error()
	if st, ok := status.FromError(err); ok {
		text = st.Message()
	}
	if rest, ok := strings.CutPrefix(text, crierrors.ErrSignatureValidationFailed.Error()); ok {
		return crierrors.ErrSignatureValidationFailed.Error(),
			fmt.Sprintf("image pull failed for %s because the signature validation failed%s", ref, rest),
			fmt.Sprintf("Failed to pull image %q: %s", ref, text)
	}
	msg := fmt.Sprintf("Failed to pull image %q: %v", ref, err)
	return reasonErrImagePull, msg, msg
}

// errWaiting is a container that cannot start now for a reason that is
// already recorded as its waiting state.
var errWaiting = errors.New("container is waiting")

// ensureImage makes the container's image present as its pull policy says
// and returns the runtime's record of it.
func (m *Manager) ensureImage(ctx context.Context, env startEnv, c *corev1.Container) (*runtimeapi.Image, error) {
	if IsCheckpointArchive(c.Image) {
		// Nothing to pull or look up: the runtime restores the container
		// from the archive at CreateContainer, as CRI-O and crib take one,
		// and says there what is wrong with it. The image's user is not
		// known, so runAsNonRoot cannot be verified for such a container.
		m.cfg.Recorder.Event(env.pod, corev1.EventTypeNormal, "Pulled",
			fmt.Sprintf("Container image %q is a checkpoint archive: the runtime restores the container from it", c.Image))
		return &runtimeapi.Image{Id: c.Image}, nil
	}
	return m.ensure(ctx, env, c.Name, c.Image, c.ImagePullPolicy)
}

// IsCheckpointArchive reports whether image names a checkpoint archive
// rather than an image: an absolute path of a .tar, as CRI-O (and crib's
// runtime) take one at CreateContainer. No image reference starts with a
// slash, so the two never meet; whether the file is an archive is for the
// runtime to say. The kubelet cannot do this (its reference parser refuses
// a path before the CRI is asked); the agent does it on purpose.
func IsCheckpointArchive(image string) bool {
	return strings.HasPrefix(image, "/") && strings.HasSuffix(image, ".tar")
}

// ensureImageVolumes makes the image of every image volume the container
// mounts present, as the volume's pull policy says, with the same secrets
// and backoff as a container image; a failure is the container's waiting
// reason, as the kubelet reports it. It returns the image to mount by
// volume name.
func (m *Manager) ensureImageVolumes(ctx context.Context, env startEnv, c *corev1.Container) (map[string]string, error) {
	var out map[string]string
	for _, vm := range c.VolumeMounts {
		v := podVolume(env.pod, vm.Name)
		if v == nil || v.Image == nil {
			continue
		}
		if _, done := out[v.Name]; done {
			continue
		}
		img, err := m.ensure(ctx, env, c.Name, v.Image.Reference, v.Image.PullPolicy)
		if err != nil {
			return nil, fmt.Errorf("image volume %q: %w", v.Name, err)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[v.Name] = img.Id
	}
	return out, nil
}

// podVolume is the pod's volume named name, or nil.
func podVolume(pod *corev1.Pod, name string) *corev1.Volume {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}

// ensure makes image ref present for container name as policy says and
// returns the runtime's record of it.
func (m *Manager) ensure(ctx context.Context, env startEnv, name, ref string, policy corev1.PullPolicy) (*runtimeapi.Image, error) {
	pod := env.pod
	spec := &runtimeapi.ImageSpec{Image: ref, Annotations: env.sandboxConfig.GetAnnotations()}
	present, err := m.imageStatus(ctx, spec)
	if err != nil {
		return nil, err
	}
	switch {
	case policy == corev1.PullNever && present == nil:
		msg := fmt.Sprintf("image %q is not present and the pull policy is Never", ref)
		env.waiting.wait(name, reasonErrImageNeverPull, msg)
		m.cfg.Recorder.Event(pod, corev1.EventTypeWarning, reasonErrImageNeverPull, msg)
		return nil, fmt.Errorf("%s: %w", msg, errWaiting)
	case present != nil && policy != corev1.PullAlways:
		m.cfg.Recorder.Event(pod, corev1.EventTypeNormal, "Pulled", fmt.Sprintf("Container image %q already present on machine", ref))
		return present, nil
	}

	key := string(pod.UID) + "/" + ref
	if in, left := m.cfg.PullBackoff.InBackoff(key); in {
		msg := fmt.Sprintf("Back-off pulling image %q (%s left)", ref, left.Round(time.Second))
		env.waiting.wait(name, reasonImagePullBackOff, msg)
		m.cfg.Recorder.Event(pod, corev1.EventTypeNormal, "BackOff", msg)
		return nil, &waitError{msg: msg, left: left}
	}
	m.cfg.Recorder.Event(pod, corev1.EventTypeNormal, "Pulling", fmt.Sprintf("Pulling image %q", ref))
	began := m.cfg.Clock.Now()
	ended := func() {}
	if m.cfg.Pulling != nil {
		ended = m.cfg.Pulling(pod, name, ref)
	}
	pulled, err := m.cfg.Images.PullImage(ctx, spec, pullAuth(pod, ref, env.data.Secrets), env.sandboxConfig)
	ended()
	if err != nil {
		m.cfg.PullBackoff.Next(key)
		reason, waiting, event := pullFailure(ref, err)
		env.waiting.wait(name, reason, waiting)
		m.cfg.Recorder.Event(pod, corev1.EventTypeWarning, "Failed", event)
		return nil, fmt.Errorf("pull image %q: %w", ref, fromGRPC(err))
	}
	m.cfg.PullBackoff.Reset(key)
	m.cfg.Recorder.Event(pod, corev1.EventTypeNormal, "Pulled",
		fmt.Sprintf("Successfully pulled image %q in %s", ref, m.cfg.Clock.Since(began).Round(time.Millisecond)))
	img, err := m.imageStatus(ctx, &runtimeapi.ImageSpec{Image: pulled})
	if err != nil {
		return nil, err
	}
	if img == nil {
		return nil, fmt.Errorf("image %q is gone right after its pull", ref)
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
