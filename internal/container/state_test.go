package container

import (
	"testing"

	"github.com/crib-dev/crib/internal/lifecycle"
)

func TestStateEvents(t *testing.T) {
	for _, tt := range []struct {
		state State
		want  lifecycle.Kind
		ok    bool
	}{
		{Creating, 0, false},
		{Created, 0, false}, // Create publishes it itself, once indexed
		{Running, lifecycle.Started, true},
		{Exited, lifecycle.Stopped, true},
		{Unknown, 0, false},
	} {
		got, ok := tt.state.event()
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s.event() = %v, %v; want %v, %v", tt.state, got, ok, tt.want, tt.ok)
		}
	}
}
