package kuberuntime

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/plan"
	"github.com/crib-dev/crib/internal/agent/podconfig"
)

// wantedResources is plan.Input.Resources: what each container of the
// spec would be created with now.
func (m *Manager) wantedResources(pod *corev1.Pod) map[string]plan.Resources {
	out := map[string]plan.Resources{}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if r := planResources(podconfig.ContainerResources(pod, &list[i], m.cfg.PodConfig)); r != nil {
				out[list[i].Name] = *r
			}
		}
	}
	return out
}

// planResources is the plan's view of CRI resources, nil for none.
func planResources(r *runtimeapi.LinuxContainerResources) *plan.Resources {
	if r == nil {
		return nil
	}
	return &plan.Resources{
		CPUShares:   r.CpuShares,
		CPUQuota:    r.CpuQuota,
		CPUPeriod:   r.CpuPeriod,
		MemoryLimit: r.MemoryLimitInBytes,
	}
}

// resizeSpec is the spec container a plan.Resize names, nil if the spec
// has none there.
func resizeSpec(pod *corev1.Pod, r plan.Resize) *corev1.Container {
	list := pod.Spec.Containers
	if r.Type == labels.TypeInit {
		list = pod.Spec.InitContainers
	}
	if r.Index < 0 || r.Index >= len(list) || list[r.Index].Name != r.Name {
		return nil
	}
	return &list[r.Index]
}

// resizeContainers changes the resources of running containers in place
// (UpdateContainerResources, with what podconfig makes of the spec now)
// and returns the IDs it resized; each failure is joined into the error
// and retried by a later sync, which still finds the difference.
func (m *Manager) resizeContainers(ctx context.Context, pod *corev1.Pod, rs []plan.Resize) ([]string, error) {
	var done []string
	var errs []error
	for _, r := range rs {
		spec := resizeSpec(pod, r)
		if spec == nil {
			continue
		}
		want := podconfig.ContainerResources(pod, spec, m.cfg.PodConfig)
		if err := m.cfg.Runtime.UpdateContainerResources(ctx, r.ID, &runtimeapi.ContainerResources{Linux: want}); err != nil {
			errs = append(errs, fmt.Errorf("resize container %s (%s): %w", r.Name, r.ID, fromGRPC(err)))
			m.cfg.Recorder.Event(pod, corev1.EventTypeWarning, "ResizeFailed", fmt.Sprintf("container %s: %v", r.Name, err))
			continue
		}
		m.cfg.Log.Info("resized container", "pod", podKey(pod), "container", r.Name, "id", r.ID, "why", r.Message)
		done = append(done, r.ID)
	}
	return done, errors.Join(errs...)
}

// splitResizes parts the resizes into those that lower a CPU or memory
// limit of what the runtime reports and the others. The kubelet orders a
// resize so that the pod's cgroup never holds less than its containers
// (cgroup v1 refuses a child's CFS quota above its parent's): container
// limits that shrink, then the pod cgroup, then container limits that
// grow. A container whose one limit grows while another shrinks goes
// first; should its growth not fit the pod cgroup yet, the next sync
// retries it, after the pod cgroup grew.
func splitResizes(rs []plan.Resize, obs plan.Observed) (shrinking, growing []plan.Resize) {
	lower := func(to, from int64) bool { return to > 0 && (from <= 0 || to < from) }
	for _, r := range rs {
		cur := findContainer(obs, r.ID).Resources
		if cur != nil && (lower(r.To.MemoryLimit, cur.MemoryLimit) || lower(r.To.CPUQuota, cur.CPUQuota)) {
			shrinking = append(shrinking, r)
		} else {
			growing = append(growing, r)
		}
	}
	return shrinking, growing
}

// updateSandboxResources tells the runtime the pod's new resources after
// a resize (UpdatePodSandboxResources). It is advice to the runtime, as
// the kubelet treats it: a runtime that does not implement it or fails is
// logged, and the resize stands.
func (m *Manager) updateSandboxResources(ctx context.Context, pod *corev1.Pod, sandboxID string, cfg *runtimeapi.PodSandboxConfig) {
	_, err := m.cfg.Runtime.UpdatePodSandboxResources(ctx, &runtimeapi.UpdatePodSandboxResourcesRequest{
		PodSandboxId: sandboxID,
		Overhead:     cfg.GetLinux().GetOverhead(),
		Resources:    cfg.GetLinux().GetResources(),
	})
	if err != nil {
		m.cfg.Log.Warn("update pod sandbox resources", "pod", podKey(pod), "sandbox", sandboxID, "err", err)
	}
}

// Forget returns a copy of the observation without the containers named
// by ids, so that observing from it reads their statuses again: the sync
// resized them, and what the runtime reports of them changed.
func (p *PodRuntime) Forget(ids []string) *PodRuntime {
	if p == nil || len(ids) == 0 {
		return p
	}
	drop := map[string]bool{}
	for _, id := range ids {
		drop[id] = true
	}
	out := *p
	out.Observed.Containers = nil
	for _, c := range p.Observed.Containers {
		if !drop[c.ID] {
			out.Observed.Containers = append(out.Observed.Containers, c)
		}
	}
	return &out
}
