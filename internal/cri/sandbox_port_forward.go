package cri

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/sandbox"
)

// PortForward checks the request against the sandbox and returns the URL
// of a port-forward session.
func (s *Server) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	if err := checkID("pod_sandbox_id", req.GetPodSandboxId(), true); err != nil {
		return nil, err
	}
	if n := len(req.GetPort()); n > 65535 {
		return nil, invalid("port: %d ports, more than there are", n)
	}
	for i, p := range req.GetPort() {
		if p <= 0 || p > 65535 {
			return nil, invalid("port[%d]: %d is not a TCP port", i, p)
		}
	}
	sb, err := s.sandboxes.Get(req.GetPodSandboxId())
	if err != nil {
		return nil, fmt.Errorf("pod_sandbox_id: %w", err)
	}
	if sb.State != sandbox.Ready {
		return nil, fmt.Errorf("pod_sandbox_id: sandbox %s is %s, not ready: %w", sb.ID, sb.State, errdefs.ErrFailedPrecondition)
	}
	return s.streams.GetPortForward(req)
}
