package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMonitorBinary: crib-monitor beside crib is the monitor binary;
// without it (or when it cannot be run) crib itself is, and the log says so.
func TestMonitorBinary(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "crib")
	beside := filepath.Join(dir, "crib-monitor")
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))

	if got := monitorBinary(self, log); got != self {
		t.Errorf("without crib-monitor: %s, want %s", got, self)
	}
	if !strings.Contains(logged.String(), "crib-monitor is not installed beside crib") {
		t.Errorf("no warning logged: %q", logged.String())
	}
	if err := os.WriteFile(beside, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := monitorBinary(self, log); got != self {
		t.Errorf("with a crib-monitor that cannot be executed: %s, want %s", got, self)
	}
	if err := os.Chmod(beside, 0o755); err != nil {
		t.Fatal(err)
	}
	logged.Reset()
	if got := monitorBinary(self, log); got != beside {
		t.Errorf("with crib-monitor beside crib: %s, want %s", got, beside)
	}
	if logged.Len() != 0 {
		t.Errorf("logged with crib-monitor in place: %q", logged.String())
	}
}
