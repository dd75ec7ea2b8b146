package daemon

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/crib-dev/crib/internal/testutil"
)

// With [metrics] address set, /metrics is served while the daemon runs,
// counts the managers' things, and its port is closed by Shutdown.
func TestMetricsServedUntilShutdown(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := os.Stat("/usr/sbin/runc"); err != nil {
		t.Skip("needs runc")
	}
	cfg := testConfig(t)
	cfg.Metrics.Address = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := New(ctx, cfg, "/nonexistent/crib", quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Shutdown(context.Background()) })
	addr := d.MetricsAddr()
	if addr == "" {
		t.Fatal("no metrics address with [metrics] address set")
	}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	select {
	case <-d.Ready():
	case err := <-done:
		t.Fatalf("Run = %v", err)
	case <-time.After(testutil.Patience(60 * time.Second)):
		t.Fatal("daemon never ready")
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`crib_sandboxes{state="ready"} 0`, `crib_containers{state="running"} 0`, "crib_monitors_idle 0"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	if err := d.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	// Binding the address proves the port was let go. A dial would not:
	// a connection to a closed loopback port in the ephemeral range can
	// succeed by connecting to itself (TCP simultaneous open), which made
	// this test fail once in CI.
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("metrics port %s not released by Shutdown: %v", addr, err)
	}
	lis.Close()
}

// Without [metrics] address, nothing listens.
func TestMetricsOffByDefault(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := os.Stat("/usr/sbin/runc"); err != nil {
		t.Skip("needs runc")
	}
	d, err := New(context.Background(), testConfig(t), "/nonexistent/crib", quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown(context.Background())
	if addr := d.MetricsAddr(); addr != "" {
		t.Errorf("metrics served on %s with no address configured", addr)
	}
}
