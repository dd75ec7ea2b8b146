package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RemoveContainer removes a container, killing it if it still runs.
// Removing an unknown container succeeds.
func (s *Server) RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	if req.GetContainerId() == "" {
		return nil, invalid("container_id is empty")
	}
	id := req.GetContainerId()
	if c, err := s.containers.Get(id); err == nil {
		id = c.ID // a prefix's full id, whose entry goes
	}
	err := s.containers.Remove(ctx, req.GetContainerId())
	s.listEntries.forget(id)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.RemoveContainerResponse{}, nil
}
