package cri

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/container"
)

// TestListEntriesOfRemovedContainersGo: a removed container's cached entry
// goes with it, and a removed sandbox's containers' entries with it,
// without waiting for a list to prune them.
func TestListEntriesOfRemovedContainersGo(t *testing.T) {
	var l listEntryCache
	for _, c := range []container.Container{
		{ID: "a1", SandboxID: "a", Config: &runtimeapi.ContainerConfig{}},
		{ID: "a2", SandboxID: "a", Config: &runtimeapi.ContainerConfig{}},
		{ID: "b1", SandboxID: "b", Config: &runtimeapi.ContainerConfig{}},
		{ID: "b2", SandboxID: "b", Config: &runtimeapi.ContainerConfig{}},
	} {
		if _, err := l.get(c, runtimeapi.ContainerState_CONTAINER_CREATED, 1); err != nil {
			t.Fatal(err)
		}
	}
	l.forgetAll([]string{"a1", "a2"})
	l.forget("b2")
	var left []string
	l.byID.Range(func(id, _ any) bool { left = append(left, id.(string)); return true })
	if len(left) != 1 || left[0] != "b1" {
		t.Errorf("entries left %v, want [b1]", left)
	}
}
