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
	// Found first, by id or prefix, for its cached list entry, which is
	// kept by sandbox.
	c, getErr := s.containers.Get(req.GetContainerId())
	err := s.containers.Remove(ctx, req.GetContainerId())
	if getErr == nil {
		s.listEntries.forget(c.SandboxID, c.ID)
	}
	if err != nil {
		return nil, err
	}
	return &runtimeapi.RemoveContainerResponse{}, nil
}
