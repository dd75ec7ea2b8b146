package cri

import (
	"context"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ListContainerStats reports every container that matches the filter (id
// or prefix, sandbox id or prefix, labels), as containerd does: exited
// containers too, by their writable layer. The figures are read from
// files only, never asked of the runtime; a container whose figures
// cannot all be read is reported with what could be, and the reason
// logged.
func (s *Server) ListContainerStats(ctx context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	f := req.GetFilter()
	if err := checkContainerStatsFilter(f); err != nil {
		return nil, err
	}
	if f.GetId() == "" && f.GetPodSandboxId() == "" && len(f.GetLabelSelector()) == 0 {
		// The kubelet's periodic unfiltered listing (an empty filter,
		// which it sends rather than none) is where readings of removed
		// containers and pods are let go.
		defer s.usage.ForgetGone()
	}
	resp := &runtimeapi.ListContainerStatsResponse{}
	for _, c := range s.containers.List() {
		switch {
		case f.GetId() != "" && !strings.HasPrefix(c.ID, f.GetId()):
		case f.GetPodSandboxId() != "" && !strings.HasPrefix(c.SandboxID, f.GetPodSandboxId()):
		case !matchLabels(f.GetLabelSelector(), c.Config.GetLabels()):
		default:
			u, err := s.usage.Container(ctx, c)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				s.log.Warn("container stats incomplete", "container", c.ID, "err", err)
			}
			resp.Stats = append(resp.Stats, containerStats(c, u))
		}
	}
	return resp, nil
}

// StreamContainerStats is ListContainerStats sent in chunks (KEP-5825).
func (s *Server) StreamContainerStats(req *runtimeapi.StreamContainerStatsRequest, stream runtimeapi.RuntimeService_StreamContainerStatsServer) error {
	list, err := s.ListContainerStats(stream.Context(), &runtimeapi.ListContainerStatsRequest{Filter: req.GetFilter()})
	if err != nil {
		return err
	}
	return sendChunks(list.Stats, func(c []*runtimeapi.ContainerStats) error {
		return stream.Send(&runtimeapi.StreamContainerStatsResponse{ContainerStats: c})
	})
}
