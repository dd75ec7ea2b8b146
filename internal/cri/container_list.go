package cri

import (
	"context"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ListContainers lists containers from memory, filtered by id (or prefix),
// sandbox id (or prefix), state and label selector.
func (s *Server) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f := req.GetFilter()
	if err := checkContainerFilter(f); err != nil {
		return nil, err
	}
	resp := &runtimeapi.ListContainersResponse{}
	for _, c := range s.containers.List() {
		item := containerItem(c)
		switch {
		case f.GetId() != "" && !strings.HasPrefix(c.ID, f.GetId()):
		case f.GetPodSandboxId() != "" && !strings.HasPrefix(c.SandboxID, f.GetPodSandboxId()):
		case f.GetState() != nil && f.GetState().GetState() != item.State:
		case !matchLabels(f.GetLabelSelector(), item.Labels):
		default:
			resp.Containers = append(resp.Containers, item)
		}
	}
	return resp, nil
}

// StreamContainers is ListContainers sent in chunks (KEP-5825).
func (s *Server) StreamContainers(req *runtimeapi.StreamContainersRequest, stream runtimeapi.RuntimeService_StreamContainersServer) error {
	list, err := s.ListContainers(stream.Context(), &runtimeapi.ListContainersRequest{Filter: req.GetFilter()})
	if err != nil {
		return err
	}
	return sendChunks(list.Containers, func(c []*runtimeapi.Container) error {
		return stream.Send(&runtimeapi.StreamContainersResponse{Containers: c})
	})
}
