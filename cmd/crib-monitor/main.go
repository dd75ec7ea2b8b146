// Command crib-monitor is the small program the crib daemon starts beside
// each container and pod: `crib-monitor monitor ...` is a container's
// monitor (or an idle one of the pool, or the exec shim) and
// `crib-monitor pause ID` the init of a pod that shares one PID namespace;
// `crib-monitor hold SOCKET` holds pods' namespaces (internal/nshold).
//
// It is its own binary, with none of the daemon's packages, because one
// runs per container for the container's whole life: the crib binary's
// package initialisation alone costs each copy about 2 MiB of heap. The
// daemon finds it beside its own binary (see cmd/crib's monitorBinary).
package main

import (
	"fmt"
	"os"
	"runtime"

	"github.com/crib-dev/crib/internal/monitor"
	"github.com/crib-dev/crib/internal/nshold"
	"github.com/crib-dev/crib/internal/pause"
)

// No allocation is profiled: the profile's tables would be each copy's.
func init() { runtime.MemProfileRate = 0 }

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crib-monitor monitor ARGS... | crib-monitor pause ID | crib-monitor hold SOCKET (started by the crib daemon)")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "monitor":
		os.Exit(monitor.Main(os.Args[2:]))
	case "pause":
		os.Exit(pause.Main())
	case "hold":
		os.Exit(nshold.Main(os.Args[2:]))
	default:
		fmt.Fprintf(os.Stderr, "crib-monitor: unknown command %q (it is started by the crib daemon)\n", os.Args[1])
		os.Exit(2)
	}
}
