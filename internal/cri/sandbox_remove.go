package cri

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RemovePodSandbox removes the pod's containers and then the sandbox,
// stopping what still runs. Removing an unknown sandbox succeeds.
func (s *Server) RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	sb, err := s.sandboxes.Get(req.GetPodSandboxId())
	if errdefs.IsNotFound(err) {
		return &runtimeapi.RemovePodSandboxResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, c := range s.containers.InSandbox(sb.ID) {
		ids = append(ids, c.ID)
	}
	err = s.containers.RemoveInSandbox(ctx, sb.ID)
	s.listEntries.forgetAll(ids)
	if err != nil {
		return nil, fmt.Errorf("remove sandbox %s: %w", sb.ID, err)
	}
	if err := s.sandboxes.Remove(ctx, sb.ID); err != nil {
		return nil, err
	}
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}
