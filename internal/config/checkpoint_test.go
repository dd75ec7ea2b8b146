package config

import (
	"strings"
	"testing"
)

func TestValidateCheckpointCriuPath(t *testing.T) {
	tests := []struct {
		path string
		want string // a part of the error; "" means valid
	}{
		{"", ""},
		{"/var/lib/cri-conformance/criu/bin/criu", ""},
		{"bin/criu", "is not an absolute path"},
		{"/usr/sbin/criu-4.1", "is not named criu"},
	}
	for _, tt := range tests {
		c := Default()
		c.Checkpoint.CriuPath = tt.path
		err := c.Validate()
		if tt.want == "" {
			if err != nil {
				t.Errorf("Validate() with checkpoint.criu_path %q = %v, want nil", tt.path, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "checkpoint.criu_path") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate() with checkpoint.criu_path %q = %v, want an error naming checkpoint.criu_path and %q", tt.path, err, tt.want)
		}
	}
}
