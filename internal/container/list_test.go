package container

import (
	"testing"
	"time"
)

// TestListOldestFirst: List returns every container, ordered by creation
// time, whatever the map's order.
func TestListOldestFirst(t *testing.T) {
	base := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	m := &Manager{byID: map[string]*entry{}}
	for i, offset := range []int{5, 1, 4, 2, 3, 0} {
		id := string(rune('a' + i))
		m.byID[id] = &entry{c: Container{ID: id, CreatedAt: base.Add(time.Duration(offset) * time.Second)}}
	}
	got := m.List()
	if len(got) != len(m.byID) {
		t.Fatalf("List returned %d containers, want %d", len(got), len(m.byID))
	}
	var order string
	for i, c := range got {
		order += c.ID
		if i > 0 && c.CreatedAt.Before(got[i-1].CreatedAt) {
			t.Errorf("%s (created %s) listed after %s (created %s)", c.ID, c.CreatedAt, got[i-1].ID, got[i-1].CreatedAt)
		}
	}
	if order != "fbdeca" {
		t.Errorf("order %q, want fbdeca", order)
	}
}
