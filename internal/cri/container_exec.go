package cri

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/container"
	cv "github.com/crib-dev/crib/internal/crivalidate"
)

// Exec checks the request against the container and returns the URL of
// an exec session.
func (s *Server) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if err := checkID("container_id", req.GetContainerId(), true); err != nil {
		return nil, err
	}
	if err := cv.Command("cmd", req.GetCmd()); err != nil {
		return nil, err
	}
	switch {
	case req.GetTty() && req.GetStderr():
		return nil, invalid("tty and stderr are both set: a terminal has one output stream")
	case !req.GetStdin() && !req.GetStdout() && !req.GetStderr():
		return nil, invalid("none of stdin, stdout and stderr is set")
	}
	if _, err := s.runningContainer(req.GetContainerId()); err != nil {
		return nil, err
	}
	return s.streams.GetExec(req)
}

// runningContainer returns the running container id names (an id or a
// unique prefix).
func (s *Server) runningContainer(id string) (container.Container, error) {
	c, err := s.containers.Get(id)
	if err != nil {
		return c, fmt.Errorf("container_id: %w", err)
	}
	if c.State != container.Running {
		return c, fmt.Errorf("container_id: container %s is %s, not running: %w", c.ID, c.State, errdefs.ErrFailedPrecondition)
	}
	return c, nil
}
