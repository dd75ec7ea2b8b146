package cri

import (
	"context"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/sandbox"
)

// ListPodSandboxStats reports every ready pod that matches the filter (id
// or prefix, labels), as containerd does: a pod that is not ready has no
// usage to read. The figures are read from files only; a pod whose
// figures cannot all be read is reported with what could be, and the
// reason logged.
func (s *Server) ListPodSandboxStats(ctx context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	f := req.GetFilter()
	if err := checkSandboxStatsFilter(f); err != nil {
		return nil, err
	}
	if f.GetId() == "" && len(f.GetLabelSelector()) == 0 {
		// As ListContainerStats: a kubelet that reads its stats from
		// the CRI lists pods unfiltered (an empty filter), periodically.
		defer s.usage.ForgetGone()
	}
	byPod := s.containersBySandbox()
	resp := &runtimeapi.ListPodSandboxStatsResponse{}
	for _, sb := range s.sandboxes.List() {
		switch {
		case sb.State != sandbox.Ready:
		case f.GetId() != "" && !strings.HasPrefix(sb.ID, f.GetId()):
		case !matchLabels(f.GetLabelSelector(), sb.Config.GetLabels()):
		default:
			u, err := s.usage.Pod(ctx, sb, byPod[sb.ID])
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				s.log.Warn("sandbox stats incomplete", "sandbox", sb.ID, "err", err)
			}
			resp.Stats = append(resp.Stats, sandboxStats(sb, byPod[sb.ID], u))
		}
	}
	return resp, nil
}

// StreamPodSandboxStats is ListPodSandboxStats sent in chunks (KEP-5825).
func (s *Server) StreamPodSandboxStats(req *runtimeapi.StreamPodSandboxStatsRequest, stream runtimeapi.RuntimeService_StreamPodSandboxStatsServer) error {
	list, err := s.ListPodSandboxStats(stream.Context(), &runtimeapi.ListPodSandboxStatsRequest{Filter: req.GetFilter()})
	if err != nil {
		return err
	}
	return sendChunks(list.Stats, func(p []*runtimeapi.PodSandboxStats) error {
		return stream.Send(&runtimeapi.StreamPodSandboxStatsResponse{PodSandboxStats: p})
	})
}
