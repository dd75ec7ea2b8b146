package network

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// WaitOrphans waits until no CNI plugin process is left working for the
// pod id: a daemon killed during a CNI ADD leaves its plugins running, and a
// DEL that raced them would fail or be undone. It gives up when ctx ends.
func WaitOrphans(ctx context.Context, id string) {
	env := []byte("CNI_CONTAINERID=" + id + "\x00")
	for {
		if !pluginRunning(env) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pluginRunning reports whether a process has env in its environment.
func pluginRunning(env []byte) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(append([]byte{0}, data...), append([]byte{0}, env...)) {
			return true
		}
	}
	return false
}
