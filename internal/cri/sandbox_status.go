package cri

import (
	"context"
	"encoding/json"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PodSandboxStatus reports a sandbox from memory.
func (s *Server) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	sb, err := s.sandboxes.Get(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.PodSandboxStatusResponse{Status: sandboxStatus(sb)}
	if req.GetVerbose() {
		info, _ := json.Marshal(map[string]any{
			"pid":          sb.PausePid,
			"netns":        sb.NetNS,
			"cgroupParent": sb.CgroupParent,
			"dir":          sb.Dir,
		})
		resp.Info = map[string]string{"info": string(info)}
	}
	return resp, nil
}
