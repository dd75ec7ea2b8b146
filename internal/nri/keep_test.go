package nri

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	nri "github.com/containerd/nri/pkg/adaptation"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/container"
)

// noContainers is a container manager that holds none: every container
// asked of it has been removed.
type noContainers struct{}

func (noContainers) List() []container.Container { return nil }
func (noContainers) Get(id string) (container.Container, error) {
	return container.Container{}, fmt.Errorf("container %s: %w", id, errdefs.ErrNotFound)
}
func (noContainers) Spec(string) (*specs.Spec, error) { return nil, errdefs.ErrNotFound }
func (noContainers) UpdateResourcesFromPlugin(context.Context, string, *runtimeapi.LinuxContainerResources) error {
	return nil
}
func (noContainers) Stop(context.Context, string, time.Duration) error { return nil }

// TestDescribeRemovedKeepsNothing: describing a container removed
// meanwhile (as a plugin's sync does, listing the containers while they
// go) keeps nothing of it, whether its RemoveContainer came before or not.
func TestDescribeRemovedKeepsNothing(t *testing.T) {
	n := &NRI{ctrs: noContainers{}, specs: map[string]*nri.Container{}, stopped: map[string]bool{}}
	c := container.Container{ID: "gone", SandboxID: "pod", Config: &runtimeapi.ContainerConfig{}}
	if _, ctr := n.describe(c); ctr.GetId() != "gone" {
		t.Errorf("described %q, want gone", ctr.GetId())
	}
	if len(n.specs) != 0 || len(n.stopped) != 0 {
		t.Errorf("kept of a removed container: specs %v, stopped %v; want none", n.specs, n.stopped)
	}
}
