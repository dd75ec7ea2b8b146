package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/plan"
)

const (
	defaultGracePeriod = 30
	// minGracePeriod is what StopContainer gets at least after a preStop
	// hook used up the grace period, as the kubelet does.
	minGracePeriod = 2
)

// KillPod stops every live container of the pod, then its sandboxes,
// leaving them in place for their logs and statuses.
func (m *Manager) KillPod(ctx context.Context, pod *corev1.Pod, obs plan.Observed) error {
	return m.killPod(ctx, pod, obs)
}

// killPod stops every live container of the pod, then every ready sandbox.
// Containers stop in the groups of killGroups: the app containers (and
// anything else that is not a sidecar) in parallel, then each sidecar in
// reverse spec order. A group that fails to stop ends the kill, so that a
// sidecar is never stopped under a container that may still use it. Each
// group gets the whole grace period.
func (m *Manager) killPod(ctx context.Context, pod *corev1.Pod, obs plan.Observed) error {
	for _, group := range killGroups(pod, obs.Containers) {
		if err := m.killGroup(ctx, pod, obs, group); err != nil {
			return err
		}
	}
	for _, s := range obs.Sandboxes {
		if s.State != plan.SandboxReady {
			continue
		}
		if err := m.cfg.Runtime.StopPodSandbox(ctx, s.ID); err != nil && !errdefs.IsNotFound(fromGRPC(err)) {
			return fmt.Errorf("stop sandbox %s: %w", s.ID, fromGRPC(err))
		}
		m.cfg.Log.Info("pod sandbox stopped", "pod", s.ID)
	}
	return nil
}

// killGroup stops the containers of one kill group in parallel.
func (m *Manager) killGroup(ctx context.Context, pod *corev1.Pod, obs plan.Observed, group []plan.Container) error {
	var wg sync.WaitGroup
	errs := make([]error, len(group))
	for i, c := range group {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.killContainer(ctx, pod, c, firstIP(sandboxIPsByID(obs, c.SandboxID)), "Killing")
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// killContainer runs the container's preStop hook and stops it within its
// grace period. pod may be nil for a pod whose manifest is gone.
// podIP is the IP an HTTP preStop hook without a host goes to.
func (m *Manager) killContainer(ctx context.Context, pod *corev1.Pod, c plan.Container, podIP, reason string) error {
	grace := gracePeriod(pod, c)
	var spec *corev1.Container
	if pod != nil {
		spec = specContainer(pod, c.Name)
		m.cfg.Recorder.Event(pod, corev1.EventTypeNormal, "Killing", fmt.Sprintf("Stopping container %s (%s)", c.Name, reason))
	}
	if spec != nil && spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil && c.State == plan.ContainerRunning && m.cfg.Hooks != nil && grace > 0 {
		began := m.cfg.Clock.Now()
		hookCtx, cancel := context.WithTimeout(ctx, time.Duration(grace)*time.Second)
		err := m.cfg.Hooks(hookCtx, pod, spec, c.ID, podIP, spec.Lifecycle.PreStop)
		cancel()
		if err != nil {
			m.cfg.Recorder.Event(pod, corev1.EventTypeWarning, "FailedPreStopHook", fmt.Sprintf("PreStopHook failed: %v", err))
		}
		grace -= int64(m.cfg.Clock.Since(began).Seconds())
	}
	// As the kubelet, never less than a moment to exit cleanly, even for
	// a grace period of 0 or one a preStop hook used up.
	if grace < minGracePeriod {
		grace = minGracePeriod
	}
	if err := m.cfg.Runtime.StopContainer(ctx, c.ID, grace); err != nil {
		if err = fromGRPC(err); !errdefs.IsNotFound(err) {
			return fmt.Errorf("stop container %s (%s): %w", c.Name, c.ID, err)
		}
	}
	m.cfg.Log.Info("container stopped", "container", c.Name, "id", c.ID, "reason", reason, "grace", grace)
	return nil
}

// gracePeriod is how long the container gets to stop: the pod's
// termination grace period, or, for a pod whose manifest is gone, the one
// the container was made with.
func gracePeriod(pod *corev1.Pod, c plan.Container) int64 {
	switch {
	case pod != nil && pod.Spec.TerminationGracePeriodSeconds != nil:
		return *pod.Spec.TerminationGracePeriodSeconds
	case c.GracePeriod != nil:
		return *c.GracePeriod
	}
	return defaultGracePeriod
}

func specContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// TerminatePod stops a pod whose manifest was removed, running its preStop
// hooks within the grace period, and then removes everything it had:
// containers, sandboxes, volumes and logs. pod may be nil when only the
// runtime still knows the pod (the agent restarted after the manifest went).
// It is idempotent.
func (m *Manager) TerminatePod(ctx context.Context, pod *corev1.Pod, pr *PodRuntime) error {
	if err := m.killPod(ctx, pod, pr.Observed); err != nil {
		return err
	}
	var errs []error
	for _, c := range pr.Observed.Containers {
		if err := m.removeContainer(ctx, pr, c); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range pr.Observed.Sandboxes {
		if err := m.cfg.Runtime.RemovePodSandbox(ctx, s.ID); err != nil && !errdefs.IsNotFound(fromGRPC(err)) {
			errs = append(errs, fmt.Errorf("remove sandbox %s: %w", s.ID, fromGRPC(err)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if m.cfg.Cgroups != nil {
		if err := m.cfg.Cgroups.RemovePod(pr.UID); err != nil {
			return fmt.Errorf("remove cgroup of pod %s: %w", pr.UID, err)
		}
	}
	// The logs go before the pod's directory: the directory is what the
	// agent's housekeeping finds a half-removed pod by. The pod's name
	// gives its log directory; a pod known by UID alone (a teardown retried
	// after its sandboxes went) has it looked for.
	if dir := m.logDir(pr); dir != "" {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("remove logs of pod %s: %w", pr.UID, err)
		}
	} else if err := m.RemovePodLogs(pr.UID); err != nil {
		return err
	}
	if err := m.cfg.Volumes.Remove(ctx, pr.UID); err != nil {
		return fmt.Errorf("remove volumes of pod %s: %w", pr.UID, err)
	}
	if len(pr.Observed.Sandboxes)+len(pr.Observed.Containers) > 0 {
		m.cfg.Log.Info("pod removed", "pod", pr.Namespace+"/"+pr.Name, "uid", pr.UID)
	}
	return nil
}

// RemovePodLogs removes the log directories of the pod with this UID. It
// finds them by UID alone, <namespace>_<name>_<uid> (neither a namespace
// nor a name holds "_"), so that a pod whose sandboxes are gone, and with
// them its name, still loses its logs. It reads the whole log root: it is
// for pods whose name is lost, not for every teardown.
func (m *Manager) RemovePodLogs(uid string) error {
	root := m.cfg.PodConfig.PodLogRoot
	if root == "" || uid == "" {
		return nil
	}
	entries, err := os.ReadDir(root)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list pod log directories: %w", err)
	}
	for _, e := range entries {
		if parts := strings.Split(e.Name(), "_"); len(parts) != 3 || parts[2] != uid {
			continue
		}
		if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
			return fmt.Errorf("remove logs of pod %s: %w", uid, err)
		}
	}
	return nil
}

// logDir is the pod's log directory, named as the kubelet names it.
func (m *Manager) logDir(pr *PodRuntime) string {
	if m.cfg.PodConfig.PodLogRoot == "" || pr.Namespace == "" || pr.Name == "" || pr.UID == "" {
		return ""
	}
	return filepath.Join(m.cfg.PodConfig.PodLogRoot, pr.Namespace+"_"+pr.Name+"_"+pr.UID)
}

// removeContainer removes a container and its log file.
func (m *Manager) removeContainer(ctx context.Context, pr *PodRuntime, c plan.Container) error {
	if err := m.cfg.Runtime.RemoveContainer(ctx, c.ID); err != nil && !errdefs.IsNotFound(fromGRPC(err)) {
		return fmt.Errorf("remove container %s (%s): %w", c.Name, c.ID, fromGRPC(err))
	}
	if dir := m.logDir(pr); dir != "" && c.Name != "" {
		_ = os.Remove(filepath.Join(dir, c.Name, fmt.Sprintf("%d.log", c.Attempt)))
	}
	return nil
}

func firstIP(ips []string) string {
	if len(ips) == 0 {
		return ""
	}
	return ips[0]
}
