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
	err := s.containers.Remove(ctx, req.GetContainerId())
	// A prefix of an id leaves its entry to the next pruning.
	s.listEntries.forget(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.RemoveContainerResponse{}, nil
}
