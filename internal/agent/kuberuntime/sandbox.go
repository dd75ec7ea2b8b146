package kuberuntime

import (
	"context"
	"fmt"
	"slices"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/podconfig"
)

// createSandbox runs a new sandbox for the pod and returns its ID and IPs.
// A sandbox that came up but whose status cannot be read is stopped again,
// so that the next sync starts from a clean slate.
func (m *Manager) createSandbox(ctx context.Context, pod *corev1.Pod, cfg *runtimeapi.PodSandboxConfig) (string, []string, error) {
	handler, err := podconfig.RuntimeHandler(pod, m.cfg.PodConfig)
	if err != nil {
		m.cfg.Recorder.Event(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", err.Error())
		return "", nil, err
	}
	if cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions().GetMode() == runtimeapi.NamespaceMode_POD {
		if err := m.checkUserNamespaces(ctx, handler); err != nil {
			m.cfg.Recorder.Event(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", err.Error())
			return "", nil, err
		}
	}
	if usesBindMountOptions(pod) {
		if err := m.checkMountOptions(ctx); err != nil {
			m.cfg.Recorder.Event(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", err.Error())
			return "", nil, err
		}
	}
	id, err := m.cfg.Runtime.RunPodSandbox(ctx, cfg, handler)
	if err != nil {
		err = fmt.Errorf("run sandbox: %w", fromGRPC(err))
		m.cfg.Recorder.Event(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", err.Error())
		return "", nil, err
	}
	st, err := m.sandboxStatus(ctx, id)
	if err != nil {
		_ = m.cfg.Runtime.StopPodSandbox(context.WithoutCancel(ctx), id)
		return "", nil, err
	}
	_, ips := sandboxIPs(st)
	m.cfg.Log.Info("pod sandbox created", "pod", podKey(pod), "sandbox", id, "attempt", cfg.Metadata.Attempt, "ips", ips)
	return id, ips, nil
}

// checkUserNamespaces refuses a pod with its own user namespace on a
// runtime handler that does not say it supports them, as the kubelet does:
// the runtime's status lists each handler with its features.
func (m *Manager) checkUserNamespaces(ctx context.Context, handler string) error {
	what := "the runtime's default handler"
	if handler != "" {
		what = fmt.Sprintf("runtime handler %q", handler)
	}
	st, err := m.cfg.Runtime.Status(ctx, false)
	if err != nil {
		return fmt.Errorf("can't set spec.hostUsers: false: runtime status: %w", fromGRPC(err))
	}
	for _, h := range st.GetRuntimeHandlers() {
		if h.GetName() != handler {
			continue
		}
		if !h.GetFeatures().GetUserNamespaces() {
			return fmt.Errorf("can't set spec.hostUsers: false: %s does not support user namespaces: %w", what, errdefs.ErrFailedPrecondition)
		}
		return nil
	}
	return fmt.Errorf("can't set spec.hostUsers: false: the runtime does not list %s with its features, so it does not support user namespaces: %w", what, errdefs.ErrFailedPrecondition)
}

// usesBindMountOptions says whether any of the pod's containers asks for
// bind mount options on a volume.
func usesBindMountOptions(pod *corev1.Pod) bool {
	asks := func(mounts []corev1.VolumeMount) bool {
		return slices.ContainsFunc(mounts, func(vm corev1.VolumeMount) bool { return len(vm.BindMountOptions) > 0 })
	}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		if asks(c.VolumeMounts) {
			return true
		}
	}
	return slices.ContainsFunc(pod.Spec.EphemeralContainers, func(c corev1.EphemeralContainer) bool { return asks(c.VolumeMounts) })
}

// checkMountOptions refuses a pod that asks for bind mount options from a
// runtime that does not say it applies them, as the kubelet does: such a
// runtime would mount the volumes without them.
func (m *Manager) checkMountOptions(ctx context.Context) error {
	st, err := m.cfg.Runtime.Status(ctx, false)
	if err != nil {
		return fmt.Errorf("can't set volumeMounts[].bindMountOptions: runtime status: %w", fromGRPC(err))
	}
	if !st.GetFeatures().GetMountOptions() {
		return fmt.Errorf("can't set volumeMounts[].bindMountOptions: the runtime does not support mount options: %w", errdefs.ErrFailedPrecondition)
	}
	return nil
}
