package cri

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/sandbox"
	"github.com/crib-dev/crib/internal/sandboxmetrics"
	"github.com/crib-dev/crib/internal/statsservice"
)

// ListPodSandboxMetrics reports the metrics of every ready pod and of its
// containers that have a cgroup, as the kubelet serves them at
// /metrics/cadvisor. Like ListPodSandboxStats, a pod whose figures cannot
// all be read is reported with what could be, and the reason logged.
func (s *Server) ListPodSandboxMetrics(ctx context.Context, _ *runtimeapi.ListPodSandboxMetricsRequest) (*runtimeapi.ListPodSandboxMetricsResponse, error) {
	defer s.usage.ForgetGone()
	byPod := s.containersBySandbox()
	resp := &runtimeapi.ListPodSandboxMetricsResponse{}
	for _, sb := range s.sandboxes.List() {
		if sb.State != sandbox.Ready {
			continue
		}
		u, err := s.usage.Pod(ctx, sb, byPod[sb.ID])
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			s.log.Warn("sandbox metrics incomplete", "sandbox", sb.ID, "err", err)
		}
		resp.PodMetrics = append(resp.PodMetrics, sandboxmetrics.Build(metricsPod(sb, byPod[sb.ID], u), time.Now()))
	}
	return resp, nil
}

// StreamPodSandboxMetrics is ListPodSandboxMetrics sent in chunks.
func (s *Server) StreamPodSandboxMetrics(_ *runtimeapi.StreamPodSandboxMetricsRequest, stream runtimeapi.RuntimeService_StreamPodSandboxMetricsServer) error {
	list, err := s.ListPodSandboxMetrics(stream.Context(), &runtimeapi.ListPodSandboxMetricsRequest{})
	if err != nil {
		return err
	}
	return sendChunks(list.PodMetrics, func(p []*runtimeapi.PodSandboxMetrics) error {
		return stream.Send(&runtimeapi.StreamPodSandboxMetricsResponse{PodSandboxMetrics: p})
	})
}

// metricsPod names sb and its containers ctrs for their usage u.
func metricsPod(sb sandbox.Sandbox, ctrs []container.Container, u statsservice.Pod) sandboxmetrics.Pod {
	md := sb.Config.GetMetadata()
	p := sandboxmetrics.Pod{
		ID: sb.ID, Namespace: md.GetNamespace(), Name: md.GetName(), CreatedAt: sb.CreatedAt,
		Network: u.Network,
	}
	if u.Cgroup != nil {
		p.Cgroup = &u.Cgroup.Sample
	}
	for i, c := range ctrs {
		if i >= len(u.Containers) {
			break
		}
		p.Containers = append(p.Containers, metricsContainer(c, u.Containers[i]))
	}
	return p
}

func metricsContainer(c container.Container, u statsservice.Container) sandboxmetrics.Container {
	img := c.Config.GetImage().GetUserSpecifiedImage()
	if img == "" {
		img = c.Config.GetImage().GetImage()
	}
	mc := sandboxmetrics.Container{
		ID: c.ID, Name: c.Config.GetMetadata().GetName(), Image: img, StartedAt: c.StartedAt,
		Resources: c.Config.GetLinux().GetResources(),
	}
	if u.Cgroup != nil {
		mc.Cgroup = &u.Cgroup.Sample
	}
	if u.Layer != nil {
		mc.Layer = &sandboxmetrics.Layer{Device: u.Layer.Mountpoint, DiskUsage: u.Layer.DiskUsage, Capacity: u.Layer.Capacity}
	}
	return mc
}
