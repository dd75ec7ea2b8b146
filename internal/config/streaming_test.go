package config

import (
	"strings"
	"testing"
)

func TestValidateStreamingAddress(t *testing.T) {
	tests := []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:0", true},
		{"127.0.0.1:10010", true},
		{"[::1]:0", true},
		{":0", true},
		{"0.0.0.0:65535", true},
		{"", false},
		{"127.0.0.1", false},
		{"localhost:0", false},
		{"127.0.0.1:65536", false},
		{"127.0.0.1:-1", false},
		{"127.0.0.1:http", false},
		{"127.0.0.1:010", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			c := Default()
			c.Streaming.Address = tt.addr
			err := c.Validate()
			if tt.ok && err != nil {
				t.Fatalf("Validate() with streaming.address %q = %v, want nil", tt.addr, err)
			}
			if !tt.ok && (err == nil || !strings.Contains(err.Error(), "streaming.address")) {
				t.Fatalf("Validate() with streaming.address %q = %v, want an error naming streaming.address", tt.addr, err)
			}
		})
	}
}
