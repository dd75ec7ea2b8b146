package cri

import (
	"context"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ListPodSandbox lists sandboxes from memory, filtered by id (or id
// prefix), state and label selector.
func (s *Server) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f := req.GetFilter()
	if err := checkSandboxFilter(f); err != nil {
		return nil, err
	}
	resp := &runtimeapi.ListPodSandboxResponse{}
	for _, sb := range s.sandboxes.List() {
		item := sandboxItem(sb)
		if f.GetId() != "" && !strings.HasPrefix(sb.ID, f.GetId()) {
			continue
		}
		if f.GetState() != nil && f.GetState().GetState() != item.State {
			continue
		}
		if !matchLabels(f.GetLabelSelector(), item.Labels) {
			continue
		}
		resp.Items = append(resp.Items, item)
	}
	return resp, nil
}

// StreamPodSandboxes is ListPodSandbox sent in chunks (KEP-5825).
func (s *Server) StreamPodSandboxes(req *runtimeapi.StreamPodSandboxesRequest, stream runtimeapi.RuntimeService_StreamPodSandboxesServer) error {
	list, err := s.ListPodSandbox(stream.Context(), &runtimeapi.ListPodSandboxRequest{Filter: req.GetFilter()})
	if err != nil {
		return err
	}
	return sendChunks(list.Items, func(p []*runtimeapi.PodSandbox) error {
		return stream.Send(&runtimeapi.StreamPodSandboxesResponse{PodSandboxes: p})
	})
}
