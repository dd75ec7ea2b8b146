package ociruntime

import "testing"

func TestStatStateFlags(t *testing.T) {
	tests := []struct {
		name, stat string
		state      string
		flags      uint64
		ok         bool
	}{
		{"running", "42 (sh) S 1 42 42 0 -1 4194560 120 0 0 0", "S", 4194560, true},
		{"exiting", "42 (sh) S 1 42 42 0 -1 4194564 120 0 0 0", "S", 4194564, true},
		{"zombie", "42 (sh) Z 1 42 42 0 -1 4227332 120 0 0 0", "Z", 4227332, true},
		{"name with spaces and parentheses", "7 (a (b) c) R 1 7 7 0 -1 64 0", "R", 64, true},
		{"truncated", "7 (sh) R 1 7", "", 0, false},
		{"no name", "garbage", "", 0, false},
		{"flags not a number", "7 (sh) R 1 7 7 0 -1 x", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state, flags, ok := statStateFlags(tt.stat)
			if state != tt.state || flags != tt.flags || ok != tt.ok {
				t.Errorf("statStateFlags(%q) = %q %d %v, want %q %d %v", tt.stat, state, flags, ok, tt.state, tt.flags, tt.ok)
			}
			if ok && (flags&pfExiting != 0) != (tt.name == "exiting" || tt.name == "zombie") {
				t.Errorf("PF_EXITING in %d: %v", flags, flags&pfExiting != 0)
			}
		})
	}
}
