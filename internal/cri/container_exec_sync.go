package cri

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	cv "github.com/crib-dev/crib/internal/crivalidate"
)

// ExecSync runs a command in a container and returns its output. When the
// timeout fires, the command is killed and DeadlineExceeded returned.
func (s *Server) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if err := checkID("container_id", req.GetContainerId(), true); err != nil {
		return nil, err
	}
	if err := cv.Command("cmd", req.GetCmd()); err != nil {
		return nil, err
	}
	if req.GetTimeout() < 0 {
		return nil, invalid("timeout %d is negative", req.GetTimeout())
	}
	timeout := time.Duration(req.GetTimeout()) * time.Second
	res, err := s.containers.ExecSync(ctx, req.GetContainerId(), req.GetCmd(), timeout)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ExecSyncResponse{Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode}, nil
}
