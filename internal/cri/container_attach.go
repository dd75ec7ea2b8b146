package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Attach checks the request against the container and returns the URL of
// an attach session. The session follows the container's own terminal
// setting; stdin needs a container created with stdin.
func (s *Server) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if err := checkID("container_id", req.GetContainerId(), true); err != nil {
		return nil, err
	}
	switch {
	case req.GetTty() && req.GetStderr():
		return nil, invalid("tty and stderr are both set: a terminal has one output stream")
	case !req.GetStdin() && !req.GetStdout() && !req.GetStderr():
		return nil, invalid("none of stdin, stdout and stderr is set")
	}
	c, err := s.runningContainer(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	if req.GetStdin() && !c.Config.GetStdin() {
		return nil, invalid("stdin: container %s was created without stdin", c.ID)
	}
	return s.streams.GetAttach(req)
}
