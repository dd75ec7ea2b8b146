package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crib-dev/crib/internal/testutil"
)

func TestValidateMetricsAddress(t *testing.T) {
	tests := []struct {
		addr string
		ok   bool
	}{
		{"", true}, // off
		{"127.0.0.1:9123", true},
		{"[::1]:9123", true},
		{":9123", true},
		{"127.0.0.1", false},
		{"localhost:9123", false},
		{"127.0.0.1:65536", false},
		{"127.0.0.1:metrics", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			c := Default()
			c.Metrics.Address = tt.addr
			err := c.Validate()
			if tt.ok && err != nil {
				t.Fatalf("Validate() with metrics.address %q = %v, want nil", tt.addr, err)
			}
			if !tt.ok && (err == nil || !strings.Contains(err.Error(), "metrics.address")) {
				t.Fatalf("Validate() with metrics.address %q = %v, want an error naming metrics.address", tt.addr, err)
			}
		})
	}
}

// The [metrics] table is off by default and read from a drop-in like any
// other, with its provenance; a bad address there is an error naming the
// drop-in and its line.
func TestLoadMetricsTable(t *testing.T) {
	if got := Default().Metrics.Address; got != "" {
		t.Fatalf("default metrics.address = %q, want empty (off)", got)
	}
	dir := t.TempDir()
	testutil.WriteTree(t, dir, map[string]string{
		"crib.toml":              "log_level = \"info\"\n",
		"crib.d/10-metrics.toml": "[metrics]\naddress = \"127.0.0.1:9123\"\n",
	})
	main, dropins := filepath.Join(dir, "crib.toml"), filepath.Join(dir, "crib.d")
	good := filepath.Join(dropins, "10-metrics.toml")
	l, err := LoadFiles(main, false)
	if err == nil {
		err = l.Validate()
	}
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if src := l.Sources["metrics.address"]; src.File != good || src.Line != 2 {
		t.Errorf("metrics.address set by %v, want %s:2", src, good)
	}
	if cfg := l.Config; cfg.Metrics.Address != "127.0.0.1:9123" {
		t.Fatalf("metrics.address = %q, want 127.0.0.1:9123", cfg.Metrics.Address)
	}

	bad := filepath.Join(dropins, "20-bad.toml")
	if err := os.WriteFile(bad, []byte("\n[metrics]\naddress = \"localhost\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err = LoadFiles(main, false)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	err = l.Validate()
	if err == nil {
		t.Fatal("Load with metrics.address = \"localhost\" succeeded")
	}
	for _, want := range []string{"20-bad.toml", ":3", "metrics.address"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Load error %q does not contain %q", err, want)
		}
	}
}
