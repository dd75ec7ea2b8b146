package cri

import (
	"context"
	"errors"
	"fmt"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/sandbox"
	"github.com/crib-dev/crib/internal/stats"
)

// PodSandboxStats reports a ready pod's CPU, memory and process count from
// its cgroup, and its containers' stats. Network usage is left out: crib
// has no pod networking to count yet.
func (s *Server) PodSandboxStats(ctx context.Context, req *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	sb, err := s.sandboxes.Get(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	if sb.State != sandbox.Ready {
		return nil, fmt.Errorf("sandbox %s is %s, not ready: %w", sb.ID, sb.State, errdefs.ErrFailedPrecondition)
	}
	st, err := s.sandboxStats(ctx, s.statsReader(), sb, s.containersBySandbox()[sb.ID])
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PodSandboxStatsResponse{Stats: st}, nil
}

// containersBySandbox groups the containers by sandbox id.
func (s *Server) containersBySandbox() map[string][]container.Container {
	out := map[string][]container.Container{}
	for _, c := range s.containers.List() {
		out[c.SandboxID] = append(out[c.SandboxID], c)
	}
	return out
}

// sandboxStats samples sb's cgroup and its containers ctrs. The stats
// returned are as complete as they could be made; the error says what is
// missing.
func (s *Server) sandboxStats(ctx context.Context, r *stats.Reader, sb sandbox.Sandbox, ctrs []container.Container) (*runtimeapi.PodSandboxStats, error) {
	linux := &runtimeapi.LinuxPodSandboxStats{}
	st := &runtimeapi.PodSandboxStats{
		Attributes: &runtimeapi.PodSandboxAttributes{
			Id:          sb.ID,
			Metadata:    sb.Config.GetMetadata(),
			Labels:      sb.Config.GetLabels(),
			Annotations: sb.Config.GetAnnotations(),
		},
		Linux: linux,
	}
	var errs []error
	if sb.CgroupParent != "" {
		smp, err := r.Read(ctx, sb.CgroupParent)
		switch {
		case errdefs.IsNotFound(err):
			// No container has made the pod cgroup yet.
		case err != nil:
			errs = append(errs, err)
		default:
			linux.Cpu = s.cpuUsage(smp, sb.ID)
			linux.Memory = memoryUsage(smp)
			if smp.Pids != nil {
				linux.Process = &runtimeapi.ProcessUsage{
					Timestamp:    smp.Time.UnixNano(),
					ProcessCount: &runtimeapi.UInt64Value{Value: smp.Pids.Current},
				}
			}
		}
	}
	for _, c := range ctrs {
		cs, err := s.containerStats(ctx, r, c)
		if err != nil {
			errs = append(errs, err)
		}
		linux.Containers = append(linux.Containers, cs)
	}
	if err := errors.Join(errs...); err != nil {
		return st, fmt.Errorf("sandbox %s stats: %w", sb.ID, err)
	}
	return st, nil
}
