package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RunPodSandbox creates and starts a pod sandbox.
func (s *Server) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	if _, ok := s.currentInfo().handler(req.GetRuntimeHandler()); !ok {
		return nil, invalid("runtime_handler %q is not configured or its runtime is not installed", req.GetRuntimeHandler())
	}
	id, err := s.sandboxes.Run(ctx, req.GetConfig(), req.GetRuntimeHandler())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: id}, nil
}
