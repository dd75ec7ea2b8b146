package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/sandboxmetrics"
)

// ListMetricDescriptors describes every metric ListPodSandboxMetrics may
// report; the kubelet reads them once, at start.
func (s *Server) ListMetricDescriptors(context.Context, *runtimeapi.ListMetricDescriptorsRequest) (*runtimeapi.ListMetricDescriptorsResponse, error) {
	return &runtimeapi.ListMetricDescriptorsResponse{Descriptors: sandboxmetrics.Descriptors()}, nil
}
