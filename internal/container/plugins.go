package container

import (
	"context"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/sandbox"
)

// Plugins are told of each container's lifecycle and may adjust it: NRI
// (internal/nri). An error of a call that returns one fails the operation;
// the others are notifications, whose failures the plugins' side logs.
type Plugins interface {
	// BlockSync holds back the synchronisation of a plugin that connects
	// until the returned func is called, so that a container being made
	// is either in its sync or reaches it by CreateContainer.
	BlockSync() func()
	// CreateContainer may adjust spec, the container's OCI spec, before
	// it is written.
	CreateContainer(ctx context.Context, sb sandbox.Sandbox, c Container, spec *specs.Spec) error
	PostCreateContainer(ctx context.Context, c Container)
	StartContainer(ctx context.Context, c Container) error
	PostStartContainer(ctx context.Context, c Container)
	// UpdateContainer returns the resources to put in force in place of
	// res.
	UpdateContainer(ctx context.Context, c Container, res *runtimeapi.LinuxContainerResources) (*runtimeapi.LinuxContainerResources, error)
	PostUpdateContainer(ctx context.Context, c Container)
	// StopContainer tells of a container that stopped, by a Stop or on its
	// own; RemoveContainer of one removed (or whose creation was undone).
	StopContainer(ctx context.Context, c Container)
	RemoveContainer(ctx context.Context, c Container)
}
