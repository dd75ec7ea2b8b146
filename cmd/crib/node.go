package main

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// nodeCapacity is the node's memory in bytes and CPUs in millicores, which
// stand in for unset limits in the downward API and size OOM scores.
func nodeCapacity() (memory, milliCPU int64) {
	var info unix.Sysinfo_t
	if err := unix.Sysinfo(&info); err == nil {
		memory = int64(info.Totalram) * int64(info.Unit)
	}
	return memory, int64(runtime.NumCPU()) * 1000
}
