package cri

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/checkpoint"
)

// CheckpointContainer writes a running container's checkpoint archive to
// location, leaving the container running (the kubelet's forensic
// checkpoint). A timeout above zero bounds it.
func (s *Server) CheckpointContainer(ctx context.Context, req *runtimeapi.CheckpointContainerRequest) (*runtimeapi.CheckpointContainerResponse, error) {
	if req.GetContainerId() == "" {
		return nil, invalid("container_id is empty")
	}
	if req.GetLocation() == "" {
		return nil, invalid("location is empty")
	}
	timeout, err := seconds("timeout", req.GetTimeout())
	if err != nil {
		return nil, err
	}
	if s.checkpoints == nil {
		return nil, fmt.Errorf("CheckpointContainer: no checkpoint service: %w", errdefs.ErrNotImplemented)
	}
	c, err := s.containers.Get(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	// encoding/json, as containerd writes status.dump.
	status, err := json.Marshal(containerStatus(c))
	if err != nil {
		return nil, err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	err = s.checkpoints.Checkpoint(ctx, checkpoint.Request{ContainerID: c.ID, Location: req.GetLocation(), Status: status})
	if err != nil {
		return nil, err
	}
	return &runtimeapi.CheckpointContainerResponse{}, nil
}
