package cri

import (
	"slices"
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
	l.forgetSandbox("a")
	l.forget("b", "b2")
	if left := cachedIDs(&l); len(left) != 1 || left[0] != "b1" {
		t.Errorf("entries left %v, want [b1]", left)
	}
	l.forget("b", "b1")
	// A list that sees no container prunes the sandbox's empty set too.
	l.prune(2)
	n := 0
	l.bySandbox.Range(func(any, any) bool { n++; return true })
	if n != 0 {
		t.Errorf("%d sandboxes left in the cache, want none", n)
	}
}

// TestListEntriesPruned: a list forgets the entries of the containers it
// did not see, and the sandboxes left with none.
func TestListEntriesPruned(t *testing.T) {
	var l listEntryCache
	a := container.Container{ID: "a1", SandboxID: "a", Config: &runtimeapi.ContainerConfig{}}
	b := container.Container{ID: "b1", SandboxID: "b", Config: &runtimeapi.ContainerConfig{}}
	for _, c := range []container.Container{a, b} {
		if _, err := l.get(c, runtimeapi.ContainerState_CONTAINER_RUNNING, 1); err != nil {
			t.Fatal(err)
		}
	}
	l.seen(b, 2)
	l.prune(2)
	if left := cachedIDs(&l); len(left) != 1 || left[0] != "b1" {
		t.Errorf("entries left %v, want [b1]", left)
	}
	n := 0
	l.bySandbox.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Errorf("%d sandboxes in the cache, want 1", n)
	}
}

func cachedIDs(l *listEntryCache) []string {
	var ids []string
	l.bySandbox.Range(func(_, p any) bool {
		p.(*podEntries).byID.Range(func(id, _ any) bool { ids = append(ids, id.(string)); return true })
		return true
	})
	slices.Sort(ids)
	return ids
}
