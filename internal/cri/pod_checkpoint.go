package cri

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/checkpoint"
)

// CheckpointPod checkpoints the pod's running containers the request
// names into output_path, one cut of the pod (checkpoint.PodDir says the
// layout). No options are defined: any is refused.
func (s *Server) CheckpointPod(ctx context.Context, req *runtimeapi.CheckpointPodRequest) (*runtimeapi.CheckpointPodResponse, error) {
	if req.GetPodSandboxId() == "" {
		return nil, invalid("pod_sandbox_id is empty")
	}
	if req.GetOutputPath() == "" {
		return nil, invalid("output_path is empty")
	}
	if len(req.GetContainerIds()) == 0 {
		return nil, invalid("container_ids is empty")
	}
	if err := noOptions(req.GetOptions()); err != nil {
		return nil, err
	}
	if s.checkpoints == nil {
		return nil, fmt.Errorf("CheckpointPod: no checkpoint service: %w", errdefs.ErrNotImplemented)
	}
	sb, err := s.sandboxes.Get(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	statuses := map[string][]byte{}
	for i, id := range req.GetContainerIds() {
		c, err := s.containers.Get(id)
		if err != nil {
			return nil, fmt.Errorf("container_ids[%d]: %w", i, err)
		}
		if _, dup := statuses[c.ID]; dup {
			return nil, invalid("container_ids[%d]: container %s is listed twice", i, c.ID)
		}
		if c.SandboxID != sb.ID {
			return nil, invalid("container_ids[%d]: container %s is not in pod %s", i, c.ID, sb.ID)
		}
		status, err := json.Marshal(containerStatus(c))
		if err != nil {
			return nil, err
		}
		statuses[c.ID] = status
	}
	err = s.checkpoints.CheckpointPod(ctx, checkpoint.PodRequest{PodID: sb.ID, Output: req.GetOutputPath(), Containers: statuses})
	if err != nil {
		return nil, err
	}
	return &runtimeapi.CheckpointPodResponse{}, nil
}

// RestorePod makes a pod from the request's config and in it every
// container of the pod checkpoint at checkpoint_path, created and not
// started.
func (s *Server) RestorePod(ctx context.Context, req *runtimeapi.RestorePodRequest) (*runtimeapi.RestorePodResponse, error) {
	if req.GetCheckpointPath() == "" {
		return nil, invalid("checkpoint_path is empty")
	}
	if req.GetConfig() == nil {
		return nil, invalid("config is empty")
	}
	if _, ok := s.currentInfo().handler(req.GetRuntimeHandler()); !ok {
		return nil, invalid("runtime_handler %q is not configured or its runtime is not installed", req.GetRuntimeHandler())
	}
	if err := noOptions(req.GetOptions()); err != nil {
		return nil, err
	}
	if len(req.GetContainerConfigs()) == 0 {
		return nil, invalid("container_configs is empty")
	}
	seen := map[string]bool{}
	for i, c := range req.GetContainerConfigs() {
		name := c.GetMetadata().GetName()
		if name == "" {
			return nil, invalid("container_configs[%d]: metadata.name is empty", i)
		}
		if seen[name] {
			return nil, invalid("container_configs[%d]: name %q is given twice", i, name)
		}
		seen[name] = true
	}
	if s.checkpoints == nil {
		return nil, fmt.Errorf("RestorePod: no checkpoint service: %w", errdefs.ErrNotImplemented)
	}
	podID, restored, err := s.checkpoints.RestorePod(ctx, checkpoint.RestorePodRequest{
		Path:       req.GetCheckpointPath(),
		Config:     req.GetConfig(),
		Handler:    req.GetRuntimeHandler(),
		Containers: req.GetContainerConfigs(),
	})
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.RestorePodResponse{PodSandboxId: podID}
	for _, c := range restored {
		resp.RestoredContainers = append(resp.RestoredContainers, &runtimeapi.RestoredContainer{Name: c.Name, ContainerId: c.ID})
	}
	return resp, nil
}

// noOptions refuses every option: crib defines none.
func noOptions(opts map[string]string) error {
	if len(opts) == 0 {
		return nil
	}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return invalid("options: %q is not an option crib knows (it defines none)", keys[0])
}
