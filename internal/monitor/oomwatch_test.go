package monitor

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeEvents writes a cgroup v2 memory.events with oom_kill n.
func writeEvents(t *testing.T, path string, n int) {
	t.Helper()
	body := fmt.Appendf(nil, "low 0\nhigh 0\nmax 0\noom 0\noom_kill %d\n", n)
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitDone waits for the watch to end; the bound only keeps a broken
// watch from hanging the test.
func waitDone(t *testing.T, w *oomWatch) {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the watch did not end")
	}
}

// TestOOMWatchSeesAKill: a change of memory.events that counts a kill,
// read through the poller, is remembered and ends the watch.
func TestOOMWatchSeesAKill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.events")
	writeEvents(t, path, 0)
	w := &oomWatch{file: oomFile{path: path, key: "oom_kill"}}
	w.watch()
	if w.done == nil {
		t.Fatal("no watch")
	}
	if w.killed.Load() {
		t.Fatal("a kill seen before any")
	}
	writeEvents(t, path, 1)
	waitDone(t, w)
	if !w.killed.Load() {
		t.Error("the kill was not seen")
	}
}

// TestOOMWatchEndsWhenTheFileGoes: the cgroup's removal ends the watch
// without a kill.
func TestOOMWatchEndsWhenTheFileGoes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.events")
	writeEvents(t, path, 0)
	w := &oomWatch{file: oomFile{path: path, key: "oom_kill"}}
	w.watch()
	if w.done == nil {
		t.Fatal("no watch")
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	waitDone(t, w)
	if w.killed.Load() {
		t.Error("a kill seen where there was none")
	}
}
