package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	cv "github.com/crib-dev/crib/internal/crivalidate"
)

// UpdateContainerResources changes a container's cgroup resources.
func (s *Server) UpdateContainerResources(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	if err := checkID("container_id", req.GetContainerId(), true); err != nil {
		return nil, err
	}
	if err := cv.Resources("linux", req.GetLinux()); err != nil {
		return nil, err
	}
	if err := s.containers.UpdateResources(ctx, req.GetContainerId(), req.GetLinux()); err != nil {
		return nil, err
	}
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}
