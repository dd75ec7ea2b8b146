package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/plan"
	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/agent/userns"
)

// The kubelet's reasons for a container that could not be started.
const (
	reasonCrashLoopBackOff   = "CrashLoopBackOff"
	reasonCreateConfigError  = "CreateContainerConfigError"
	reasonCreateError        = "CreateContainerError"
	reasonRunContainerError  = "RunContainerError"
	reasonPostStartHookError = "PostStartHookError"
)

// startEnv is what every container start of one sync shares.
type startEnv struct {
	pod           *corev1.Pod
	sandboxID     string
	sandboxConfig *runtimeapi.PodSandboxConfig
	// userNS is the pod's block of host ids with hostUsers: false, the
	// one its sandbox maps.
	userNS  *userns.Range
	podIPs  []string
	volumes map[string]string
	data    Data
	obs     plan.Observed
	// waiting collects why containers of this sync could not start.
	waiting WaitingChanges
}

func (e startEnv) podIP() string {
	if len(e.podIPs) == 0 {
		return ""
	}
	return e.podIPs[0]
}

// startContainer starts one container: backoff, image, config, create,
// start, postStart. A failure is also recorded as the container's waiting
// reason in env.waiting.
func (m *Manager) startContainer(ctx context.Context, env startEnv, c *corev1.Container, typ string, restartCount uint32) error {
	pod := env.pod
	hash := plan.ContainerHash(pod, c)
	if err := m.checkCrashBackoff(env, c, hash); err != nil {
		return err
	}
	img, err := m.ensureImage(ctx, env, c)
	if err != nil {
		return err
	}
	imageVolumes, err := m.ensureImageVolumes(ctx, env, c)
	if err != nil {
		return err
	}
	msgPath, err := m.cfg.Volumes.TerminationMessagePath(string(pod.UID), c.Name, restartCount)
	if err != nil {
		return m.startFailed(env, c, reasonCreateConfigError, err)
	}
	in := podconfig.ContainerInput{
		Pod:                        pod,
		Container:                  c,
		Type:                       typ,
		RestartCount:               restartCount,
		Hash:                       hash,
		ResizeHash:                 plan.ResizeHash(pod, c),
		PodIP:                      env.podIP(),
		PodIPs:                     env.podIPs,
		Image:                      img.Id,
		ImageUser:                  imageUser(img),
		Volumes:                    env.volumes,
		ImageVolumes:               imageVolumes,
		ConfigMaps:                 env.data.ConfigMaps,
		Secrets:                    env.data.Secrets,
		UserNamespace:              env.userNS,
		TerminationMessageHostPath: msgPath,
	}
	if in.SubPaths, err = m.prepareSubPaths(in); err != nil {
		return m.startFailed(env, c, reasonCreateConfigError, err)
	}
	config, err := podconfig.ContainerConfig(in, m.cfg.PodConfig)
	if err != nil {
		return m.startFailed(env, c, reasonCreateConfigError, err)
	}
	id, err := m.cfg.Runtime.CreateContainer(ctx, env.sandboxID, config, env.sandboxConfig)
	if err != nil {
		return m.startFailed(env, c, reasonCreateError, fmt.Errorf("create container: %w", fromGRPC(err)))
	}
	m.cfg.Recorder.Event(pod, corev1.EventTypeNormal, "Created", fmt.Sprintf("Created container %s", c.Name))
	if err := m.cfg.Runtime.StartContainer(ctx, id); err != nil {
		return m.startFailed(env, c, reasonRunContainerError, fmt.Errorf("start container: %w", fromGRPC(err)))
	}
	env.waiting.started(c.Name)
	m.cfg.Recorder.Event(pod, corev1.EventTypeNormal, "Started", fmt.Sprintf("Started container %s", c.Name))
	m.cfg.Log.Info("container started", "pod", podKey(pod), "container", c.Name, "id", id, "restartCount", restartCount)

	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil && m.cfg.Hooks != nil {
		if err := m.cfg.Hooks(ctx, pod, c, id, env.podIP(), c.Lifecycle.PostStart); err != nil {
			msg := fmt.Sprintf("PostStartHook failed: %v", err)
			m.cfg.Recorder.Event(pod, corev1.EventTypeWarning, "FailedPostStartHook", msg)
			_ = m.killContainer(ctx, pod, plan.Container{ID: id, Name: c.Name, State: plan.ContainerRunning}, env.podIP(), "FailedPostStartHook")
			env.waiting.wait(c.Name, reasonPostStartHookError, msg)
			return fmt.Errorf("container %s: %s", c.Name, msg)
		}
	}
	return nil
}

// prepareSubPaths has the volumes bind-mount every subPath of the
// container safely (a symlink planted in a volume must never lead the
// runtime to a host path) and returns their host paths by volumeMount
// index. It runs on every create, so a recreated container gets mounts
// that match the volume as it is now.
func (m *Manager) prepareSubPaths(in podconfig.ContainerInput) (map[int]string, error) {
	subs, err := podconfig.SubPaths(in, m.cfg.PodConfig)
	if err != nil || len(subs) == 0 {
		return nil, err
	}
	c, uid := in.Container, string(in.Pod.UID)
	out := make(map[int]string, len(subs))
	for i, vm := range c.VolumeMounts {
		sub, ok := subs[i]
		if !ok {
			continue
		}
		volumePath := in.Volumes[vm.Name]
		if volumePath == "" {
			return nil, fmt.Errorf("container %q: volumeMounts[%d] (%s): volume %q to mount: %w", c.Name, i, vm.Name, vm.Name, errdefs.ErrNotFound)
		}
		p, err := m.cfg.Volumes.PrepareSubPath(uid, vm.Name, volumePath, sub, c.Name, i)
		if err != nil {
			return nil, fmt.Errorf("container %q: volumeMounts[%d] (%s): %w", c.Name, i, vm.Name, err)
		}
		out[i] = p
	}
	return out, nil
}

// checkCrashBackoff holds back a container whose last instance exited
// recently, doubling the wait after each crash as the kubelet does.
func (m *Manager) checkCrashBackoff(env startEnv, c *corev1.Container, hash string) error {
	var last *plan.Container
	for i := range env.obs.Containers {
		if env.obs.Containers[i].Name == c.Name {
			last = &env.obs.Containers[i]
			break
		}
	}
	if last == nil || last.State != plan.ContainerExited {
		return nil
	}
	pod := env.pod
	key := fmt.Sprintf("%s_%s_%s_%s_%s", pod.Name, pod.Namespace, pod.UID, c.Name, hash)
	finished := last.FinishedAt
	if finished.IsZero() {
		finished = m.cfg.Clock.Now()
	}
	if in, left := m.cfg.CrashBackoff.InBackoffSince(key, finished); in {
		msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
			m.cfg.CrashBackoff.Delay(key), c.Name, pod.Name, pod.Namespace, pod.UID)
		env.waiting.wait(c.Name, reasonCrashLoopBackOff, msg)
		return &waitError{msg: msg, left: left}
	}
	m.cfg.CrashBackoff.NextAt(key, finished)
	return nil
}

func (m *Manager) startFailed(env startEnv, c *corev1.Container, reason string, err error) error {
	env.waiting.wait(c.Name, reason, err.Error())
	m.cfg.Recorder.Event(env.pod, corev1.EventTypeWarning, "Failed", fmt.Sprintf("Error: %v", err))
	return fmt.Errorf("container %s: %w", c.Name, err)
}

// IsWaiting reports whether err only says a container is waiting for a
// reason already recorded (backoff, image policy), not a new failure.
func IsWaiting(err error) bool { return errors.Is(err, errWaiting) }

// waitError is a container held back by a backoff, which ends in left.
type waitError struct {
	msg  string
	left time.Duration
}

func (e *waitError) Error() string        { return e.msg }
func (e *waitError) Is(target error) bool { return target == errWaiting }

// RetryAfter is how long a sync that failed with err can wait before it is
// worth trying again: the shortest backoff left among the containers that
// wait, or 0 when err holds anything else (a failure to retry soon) or a
// wait of unknown length.
func RetryAfter(err error) time.Duration {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var shortest time.Duration
		for _, e := range joined.Unwrap() {
			d := RetryAfter(e)
			if d == 0 {
				return 0
			}
			if shortest == 0 || d < shortest {
				shortest = d
			}
		}
		return shortest
	}
	var we *waitError
	if errors.As(err, &we) {
		return we.left
	}
	return 0
}

func imageUser(img *runtimeapi.Image) *podconfig.ImageUser {
	if img == nil {
		return nil
	}
	u := &podconfig.ImageUser{Username: img.Username}
	if img.Uid != nil {
		v := img.Uid.Value
		u.UID = &v
	}
	return u
}
