package cri

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// StopPodSandbox kills the pod's remaining containers and stops the
// sandbox. Stopping a stopped or unknown sandbox succeeds.
func (s *Server) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	sb, err := s.sandboxes.Get(req.GetPodSandboxId())
	if errdefs.IsNotFound(err) {
		return &runtimeapi.StopPodSandboxResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := s.containers.StopInSandbox(ctx, sb.ID, 0); err != nil {
		return nil, fmt.Errorf("stop sandbox %s: %w", sb.ID, err)
	}
	if err := s.sandboxes.Stop(ctx, sb.ID); err != nil {
		return nil, err
	}
	return &runtimeapi.StopPodSandboxResponse{}, nil
}
