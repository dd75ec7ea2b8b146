package daemon

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/sandbox"
)

// checkpointPods is what pod checkpoints and restores need of the pods
// (checkpoint.Pods), over the sandbox and container managers.
type checkpointPods struct {
	sandboxes  *sandbox.Manager
	containers *container.Manager
}

func (p checkpointPods) Pod(id string) (*runtimeapi.PodSandboxMetadata, string, error) {
	sb, err := p.sandboxes.Get(id)
	if err != nil {
		return nil, "", err
	}
	if sb.State != sandbox.Ready {
		return nil, "", fmt.Errorf("pod %s is %s, not ready: %w", sb.ID, sb.State, errdefs.ErrFailedPrecondition)
	}
	return sb.Config.GetMetadata(), sb.RuntimeHandler, nil
}

func (p checkpointPods) Find(md *runtimeapi.PodSandboxMetadata) string {
	for _, sb := range p.sandboxes.List() {
		o := sb.Config.GetMetadata()
		if o.GetName() == md.GetName() && o.GetNamespace() == md.GetNamespace() && o.GetUid() == md.GetUid() && o.GetAttempt() == md.GetAttempt() {
			return sb.ID
		}
	}
	return ""
}

func (p checkpointPods) RunPod(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	return p.sandboxes.Run(ctx, cfg, handler)
}

func (p checkpointPods) CreateContainer(ctx context.Context, podID string, cfg *runtimeapi.ContainerConfig) (string, error) {
	return p.containers.Create(ctx, podID, cfg)
}

// RemovePod does what StopPodSandbox and RemovePodSandbox do.
func (p checkpointPods) RemovePod(ctx context.Context, id string) error {
	if err := p.containers.StopInSandbox(ctx, id, 0); err != nil {
		return fmt.Errorf("stop pod %s: %w", id, err)
	}
	if err := p.sandboxes.Stop(ctx, id); err != nil {
		return err
	}
	if err := p.containers.RemoveInSandbox(ctx, id); err != nil {
		return fmt.Errorf("remove pod %s: %w", id, err)
	}
	return p.sandboxes.Remove(ctx, id)
}
