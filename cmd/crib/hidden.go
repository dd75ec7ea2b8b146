package main

import (
	"log/slog"
	"os"
	"path/filepath"

	"github.com/crib-dev/crib/internal/monitor"
	"github.com/crib-dev/crib/internal/pause"
)

// monitorMain is `crib monitor`, what the daemon runs per container when
// crib-monitor is not installed beside crib.
func monitorMain(args []string) int { return monitor.Main(args) }

// pauseMain is `crib pause`, the same fallback for a pod's pause.
func pauseMain() int { return pause.Main() }

// monitorBinaryName is the small program (cmd/crib-monitor) that runs
// beside every container and shared-PID pod.
const monitorBinaryName = "crib-monitor"

// monitorBinary returns the binary the runtime starts as containers'
// monitors and pods' pause processes: crib-monitor beside self, else self,
// whose `monitor` and `pause` subcommands do the same with the whole of
// crib's memory in each copy, which the log says.
func monitorBinary(self string, log *slog.Logger) string {
	beside := filepath.Join(filepath.Dir(self), monitorBinaryName)
	if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return beside
	}
	log.Warn("crib-monitor is not installed beside crib: monitors and pause processes run as crib itself, about 2 MiB more each",
		"want", beside, "build", "CGO_ENABLED=0 go build -o "+filepath.Dir(self)+"/ ./cmd/crib ./cmd/crib-monitor")
	return self
}
