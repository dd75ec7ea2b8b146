package container

import (
	"slices"
	"testing"
	"time"
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

// TestInSandbox: a sandbox's containers, oldest first, and none of
// another's.
func TestInSandbox(t *testing.T) {
	m := &Manager{byID: map[string]*entry{}}
	now := time.Now()
	for i, c := range []Container{
		{ID: "a2", SandboxID: "pod-a"},
		{ID: "b1", SandboxID: "pod-b"},
		{ID: "a1", SandboxID: "pod-a"},
	} {
		c.CreatedAt = now.Add(-time.Duration(i) * time.Second)
		m.index(&entry{c: c})
	}
	var got []string
	for _, c := range m.InSandbox("pod-a") {
		got = append(got, c.ID)
	}
	if want := []string{"a1", "a2"}; !slices.Equal(got, want) {
		t.Errorf("InSandbox(pod-a) = %q, want %q", got, want)
	}
	if got := m.InSandbox("pod-none"); len(got) != 0 {
		t.Errorf("InSandbox(pod-none) = %v, want none", got)
	}
}
