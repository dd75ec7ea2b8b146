package cgroupfs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestRemoveTreeKillsAndRemovesDeepestFirst(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	h, err := Find("/sys/fs/cgroup")
	if err != nil {
		t.Skip(err)
	}
	root := h.With("cgroup.procs")
	if h.Unified {
		root = h.Roots[0]
	}
	rel := fmt.Sprintf("crib-test-removetree-%d", os.Getpid())
	leaf := filepath.Join(root, rel, "pod", "container")
	if err := os.MkdirAll(leaf, 0o755); err != nil {
		t.Skipf("cannot make a test cgroup: %v", err)
	}
	t.Cleanup(func() { _ = RemoveTree("/sys/fs/cgroup", rel) })
	// A process left in the innermost cgroup, as a killed runtime leaves
	// its container's init.
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = sleeper.Wait(); close(exited) }()
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(sleeper.Process.Pid)), 0o644); err != nil {
		_ = sleeper.Process.Kill()
		t.Fatal(err)
	}

	if err := RemoveTree("/sys/fs/cgroup", rel); err != nil {
		t.Fatal(err)
	}
	if Exists(filepath.Join(root, rel)) {
		t.Errorf("%s is still there", filepath.Join(root, rel))
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = sleeper.Process.Kill()
		t.Errorf("the process in the removed cgroup was not killed")
	}
	if err := RemoveTree("/sys/fs/cgroup", rel); err != nil {
		t.Errorf("removing a cgroup that is gone: %v", err)
	}
}
