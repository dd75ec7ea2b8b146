package daemon

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crib-dev/crib/internal/config"
	"github.com/crib-dev/crib/internal/testutil"
)

func testConfig(t *testing.T) config.Config {
	t.Helper()
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Root = filepath.Join(dir, "root")
	cfg.State = filepath.Join(dir, "run")
	cfg.Socket = filepath.Join(dir, "run", "crib.sock")
	cfg.CgroupParent = "/crib-daemon-test"
	cfg.Network.ConfDir = filepath.Join(dir, "cni")
	return cfg
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestRefusesToStart(t *testing.T) {
	tests := []struct {
		name   string
		change func(*config.Config)
		want   string
	}{
		{"runc missing", func(c *config.Config) {
			c.Runtimes = map[string]config.Runtime{"runc": {Path: "/nonexistent/runc"}}
		}, "not found"},
		{"root unusable", func(c *config.Config) { c.Root = "/proc/crib-cannot-be-here" }, "unusable"},
		{"invalid config", func(c *config.Config) { c.CgroupDriver = "none" }, "cgroup_driver"},
		{"unreadable blockio classes", func(c *config.Config) { c.BlockIOConfigFile = "/nonexistent/blockio.yaml" }, "blockio_config_file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			tt.change(&cfg)
			d, err := New(context.Background(), cfg, "/nonexistent/crib", quiet())
			if err == nil {
				_ = d.Shutdown(context.Background())
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestServesAndStops: the socket appears with mode 0660, Run returns when
// its context ends, and Shutdown then stops cleanly, removing the socket.
func TestServesAndStops(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := os.Stat("/usr/sbin/runc"); err != nil {
		t.Skip("needs runc")
	}
	cfg := testConfig(t)
	ctx, cancel := context.WithCancel(context.Background())
	// No crib binary: the monitor pool cannot warm up, which this test
	// does not need.
	d, err := New(ctx, cfg, "/nonexistent/crib", quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Shutdown(context.Background()) })
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var fi os.FileInfo
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var err error
		if fi, err = os.Stat(cfg.Socket); err == nil {
			break
		}
	}
	if fi == nil {
		cancel()
		t.Fatalf("socket %s never appeared: %v", cfg.Socket, <-done)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o660 {
		t.Errorf("socket mode = %v, want a socket with 0660", fi.Mode())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after cancel = %v", err)
		}
	case <-time.After(testutil.Patience(60 * time.Second)):
		t.Fatal("daemon did not stop")
	}
	if err := d.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	if _, err := os.Stat(cfg.Socket); !os.IsNotExist(err) {
		t.Errorf("socket left after stop: %v", err)
	}
}
