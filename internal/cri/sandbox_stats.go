package cri

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/sandbox"
	"github.com/crib-dev/crib/internal/statsservice"
)

// PodSandboxStats reports a ready pod's CPU, memory, I/O pressure and
// process count from its cgroup, its interfaces' traffic, and its
// containers' stats.
func (s *Server) PodSandboxStats(ctx context.Context, req *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	sb, err := s.sandboxes.Get(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	if sb.State != sandbox.Ready {
		return nil, fmt.Errorf("sandbox %s is %s, not ready: %w", sb.ID, sb.State, errdefs.ErrFailedPrecondition)
	}
	ctrs := s.containers.InSandbox(sb.ID)
	u, err := s.usage.Pod(ctx, sb, ctrs)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PodSandboxStatsResponse{Stats: sandboxStats(sb, ctrs, u)}, nil
}

// containersBySandbox groups the containers by sandbox id.
func (s *Server) containersBySandbox() map[string][]container.Container {
	out := map[string][]container.Container{}
	for _, c := range s.containers.List() {
		out[c.SandboxID] = append(out[c.SandboxID], c)
	}
	return out
}

// sandboxStats describes sb and its containers ctrs with their usage u;
// figures u lacks are left out.
func sandboxStats(sb sandbox.Sandbox, ctrs []container.Container, u statsservice.Pod) *runtimeapi.PodSandboxStats {
	linux := &runtimeapi.LinuxPodSandboxStats{Network: networkUsage(u.Network)}
	if cg := u.Cgroup; cg != nil {
		linux.Cpu = cpuUsage(cg)
		linux.Memory = memoryUsage(cg.Sample)
		linux.Process = processUsage(cg.Sample)
		linux.Io = ioUsage(cg.Sample)
	}
	for i, c := range ctrs {
		var cu statsservice.Container
		if i < len(u.Containers) {
			cu = u.Containers[i]
		}
		linux.Containers = append(linux.Containers, containerStats(c, cu))
	}
	return &runtimeapi.PodSandboxStats{
		Attributes: &runtimeapi.PodSandboxAttributes{
			Id:          sb.ID,
			Metadata:    sb.Config.GetMetadata(),
			Labels:      sb.Config.GetLabels(),
			Annotations: sb.Config.GetAnnotations(),
		},
		Linux: linux,
	}
}
