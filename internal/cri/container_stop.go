package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// StopContainer sends the stop signal, then SIGKILL after the timeout.
// Stopping a stopped or unknown container succeeds.
func (s *Server) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	if req.GetContainerId() == "" {
		return nil, invalid("container_id is empty")
	}
	timeout, err := seconds("timeout", req.GetTimeout())
	if err != nil {
		return nil, err
	}
	if err := s.containers.Stop(ctx, req.GetContainerId(), timeout); err != nil {
		return nil, err
	}
	return &runtimeapi.StopContainerResponse{}, nil
}
