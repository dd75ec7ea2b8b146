package cri

import (
	"context"

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
	timeout, err := seconds("timeout", req.GetTimeout())
	if err != nil {
		return nil, err
	}
	res, err := s.containers.ExecSync(ctx, req.GetContainerId(), req.GetCmd(), timeout)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ExecSyncResponse{Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode}, nil
}
