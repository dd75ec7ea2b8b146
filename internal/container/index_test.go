package container

import (
	"slices"
	"testing"
)

// TestIdsInSandboxIndex: a sandbox's containers are found from its own
// index as containers come and go, and a sandbox left with none leaves no
// entry behind (the index does not grow with the pods the node has had).
func TestIdsInSandboxIndex(t *testing.T) {
	m := &Manager{byID: map[string]*entry{}}
	add := func(sandbox, id string) { m.index(&entry{c: Container{ID: id, SandboxID: sandbox}}) }
	add("pod-a", "a1")
	add("pod-a", "a2")
	add("pod-b", "b1")
	check := func(sandbox string, want ...string) {
		t.Helper()
		got := m.idsInSandbox(sandbox)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("idsInSandbox(%s) = %q, want %q", sandbox, got, want)
		}
	}
	check("pod-a", "a1", "a2")
	check("pod-b", "b1")
	check("pod-none")
	m.unindex("pod-a", "a1")
	check("pod-a", "a2")
	m.unindex("pod-a", "a2")
	m.unindex("pod-b", "b1")
	check("pod-a")
	if len(m.bySandbox) != 0 || len(m.byID) != 0 {
		t.Errorf("after every container went: bySandbox %v, byID %v; want both empty", m.bySandbox, m.byID)
	}
}
