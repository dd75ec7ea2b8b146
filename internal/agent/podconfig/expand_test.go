package podconfig

import "testing"

func TestExpand(t *testing.T) {
	vars := map[string]string{"VAR": "value", "EMPTY": "", "A": "x$(B)y"}
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"$(VAR)", "value"},
		{"a$(VAR)b$(VAR)c", "avaluebvaluec"},
		{"$(EMPTY)", ""},
		{"$(UNKNOWN)", "$(UNKNOWN)"},
		{"$$(VAR)", "$(VAR)"},
		{"$$$(VAR)", "$value"},
		{"$$$$(VAR)", "$$(VAR)"},
		{"$$", "$"},
		{"$", "$"},
		{"x$", "x$"},
		{"$x", "$x"},
		{"$VAR", "$VAR"},
		{"$(VAR", "$(VAR"},
		{"$(VAR $(VAR)", "$(VAR $(VAR)"}, // the name is "VAR $(VAR", unknown
		{"$(", "$("},
		{"$()", "$()"},
		{"($(VAR))", "(value)"},
		{"$(A)", "x$(B)y"}, // values are not expanded again
		{"$(VAR)$", "value$"},
		{"ünï$(VAR)cödé", "ünïvaluecödé"},
	}
	for _, tt := range tests {
		if got := expand(tt.in, lookupIn(vars)); got != tt.want {
			t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
