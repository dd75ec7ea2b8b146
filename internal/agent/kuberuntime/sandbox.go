package kuberuntime

import (
	"context"
	"fmt"

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
