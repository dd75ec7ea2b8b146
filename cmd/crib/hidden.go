package main

import (
	"github.com/crib-dev/crib/internal/monitor"
	"github.com/crib-dev/crib/internal/pause"
)

// monitorMain is `crib monitor`, run by the daemon once per container.
func monitorMain(args []string) int { return monitor.Main(args) }

// pauseMain is `crib pause`, the init of pods that share a PID namespace.
func pauseMain() int { return pause.Main() }
