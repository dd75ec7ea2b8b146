package ids

import (
	"testing"

	"github.com/containerd/errdefs"
)

func TestFind(t *testing.T) {
	byID := map[string]int{"abc123": 1, "abd456": 2}
	tests := []struct {
		id    string
		want  int
		check func(error) bool
	}{
		{"abc123", 1, nil},
		{"abd", 2, nil},
		{"ab", 0, errdefs.IsInvalidArgument},
		{"", 0, errdefs.IsInvalidArgument},
		{"zzz", 0, errdefs.IsNotFound},
	}
	for _, tt := range tests {
		got, err := Find(byID, tt.id, "thing")
		if tt.check == nil && (err != nil || got != tt.want) {
			t.Errorf("Find(%q) = %d, %v; want %d", tt.id, got, err, tt.want)
		}
		if tt.check != nil && !tt.check(err) {
			t.Errorf("Find(%q) error = %v", tt.id, err)
		}
	}
	if a, b := New(), New(); len(a) != 64 || a == b {
		t.Errorf("New() = %q, %q", a, b)
	}
}
