package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	cv "github.com/crib-dev/crib/internal/crivalidate"
)

// UpdateRuntimeConfig takes the kubelet's pod CIDR for crib's default
// network.
func (s *Server) UpdateRuntimeConfig(_ context.Context, req *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	cidr := req.GetRuntimeConfig().GetNetworkConfig().GetPodCidr()
	if err := cv.String("runtime_config.network_config.pod_cidr", cidr, maxPodCIDR); err != nil {
		return nil, err
	}
	if err := s.network.SetPodCIDR(cidr); err != nil {
		return nil, err
	}
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}
