package cri

import (
	"context"
	"encoding/json"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerStatus reports a container from memory.
func (s *Server) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	c, err := s.containers.Get(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: containerStatus(c)}
	if req.GetVerbose() {
		info, _ := json.Marshal(map[string]any{
			"pid":            c.Pid,
			"sandboxID":      c.SandboxID,
			"runtimeHandler": c.RuntimeHandler,
		})
		resp.Info = map[string]string{"info": string(info)}
	}
	return resp, nil
}
