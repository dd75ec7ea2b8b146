package sandbox

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Plugins are told of each pod's lifecycle: NRI (internal/nri). An error of
// RunPodSandbox or UpdatePodSandbox fails the operation; the other calls
// are notifications, whose failures the plugins' side logs.
type Plugins interface {
	RunPodSandbox(ctx context.Context, s Sandbox) error
	StopPodSandbox(ctx context.Context, s Sandbox)
	RemovePodSandbox(ctx context.Context, s Sandbox)
	UpdatePodSandbox(ctx context.Context, s Sandbox, overhead, resources *runtimeapi.LinuxContainerResources) error
	PostUpdatePodSandbox(ctx context.Context, s Sandbox)
}
