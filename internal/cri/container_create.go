package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CreateContainer creates a container in a ready sandbox.
func (s *Server) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	if req.GetPodSandboxId() == "" {
		return nil, invalid("pod_sandbox_id is empty")
	}
	id, err := s.containers.Create(ctx, req.GetPodSandboxId(), req.GetConfig())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.CreateContainerResponse{ContainerId: id}, nil
}
