package cri

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// StopContainer sends the stop signal, then SIGKILL after the timeout.
// Stopping a stopped or unknown container succeeds.
func (s *Server) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	if req.GetContainerId() == "" {
		return nil, invalid("container_id is empty")
	}
	if req.GetTimeout() < 0 {
		return nil, invalid("timeout %d is negative", req.GetTimeout())
	}
	timeout := time.Duration(req.GetTimeout()) * time.Second
	if err := s.containers.Stop(ctx, req.GetContainerId(), timeout); err != nil {
		return nil, err
	}
	return &runtimeapi.StopContainerResponse{}, nil
}
