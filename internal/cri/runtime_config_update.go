package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// UpdateRuntimeConfig takes the kubelet's pod CIDR for crib's default
// network.
func (s *Server) UpdateRuntimeConfig(_ context.Context, req *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	if err := s.network.SetPodCIDR(req.GetRuntimeConfig().GetNetworkConfig().GetPodCidr()); err != nil {
		return nil, err
	}
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}
