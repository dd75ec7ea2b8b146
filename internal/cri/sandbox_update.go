package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// UpdatePodSandboxResources records a pod's new resources and resizes the
// pod cgroup when crib made it (the kubelet resizes its own first).
func (s *Server) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	if err := s.sandboxes.UpdateResources(ctx, req.GetPodSandboxId(), req.GetOverhead(), req.GetResources()); err != nil {
		return nil, err
	}
	return &runtimeapi.UpdatePodSandboxResourcesResponse{}, nil
}
