package kernelstats

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/cgroups/v3"
)

func requiresRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

// TestReadRealV1 makes a v1 cgroup in the memory, cpuacct and pids
// hierarchies, runs a process that joins it before exec'ing sleep (so its
// new pages are charged there), and reads the cgroup back.
func TestReadRealV1(t *testing.T) {
	requiresRoot(t)
	if cgroups.Mode() == cgroups.Unified {
		t.Skip("host has the unified hierarchy only")
	}
	group := fmt.Sprintf("/crib-stats-test-%d", os.Getpid())
	var procs []string
	for _, ctrl := range []string{"memory", "cpuacct", "pids"} {
		dir := filepath.Join(DefaultRoot, ctrl, group)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatalf("make cgroup: %v", err)
		}
		t.Cleanup(func() { removeCgroup(t, dir) })
		procs = append(procs, filepath.Join(dir, "cgroup.procs"))
	}

	joinCgroup(t, procs)

	r := NewReader(Config{})
	ctx := context.Background()
	var (
		s   Sample
		err error
	)
	// exec is under way once the child said it joined; wait for its pages
	// and CPU time to be charged.
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err = r.Read(ctx, group)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		charged := s.Memory != nil && s.Memory.Usage > 0 && s.CPU != nil && s.CPU.UsageNanos > 0
		if charged || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s.Memory == nil || s.Memory.Usage == 0 {
		t.Fatalf("memory = %+v, want non-zero usage", s.Memory)
	}
	if s.Memory.WorkingSet > s.Memory.Usage || s.Memory.Limited {
		t.Errorf("memory = %+v, want working set <= usage and no limit", s.Memory)
	}
	if s.CPU == nil || s.CPU.UsageNanos == 0 {
		t.Errorf("cpu = %+v, want the exec's CPU time", s.CPU)
	}
	if s.Pids == nil || s.Pids.Current != 1 {
		t.Errorf("pids = %+v, want the one sleeping process", s.Pids)
	}
}

// TestReadRealV2 reads a cgroup in the host's unified hierarchy: the
// whole host on a v2 machine, or the controller-less one a hybrid v1 host
// mounts at unified/, where only CPU time is accounted.
func TestReadRealV2(t *testing.T) {
	requiresRoot(t)
	root := DefaultRoot
	if cgroups.Mode() != cgroups.Unified {
		root = filepath.Join(DefaultRoot, "unified")
		if _, err := os.Stat(filepath.Join(root, "cgroup.procs")); err != nil {
			t.Skip("no cgroup v2 hierarchy on this host")
		}
	}
	group := fmt.Sprintf("/crib-stats-test-v2-%d", os.Getpid())
	dir := filepath.Join(root, group)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("make cgroup: %v", err)
	}
	t.Cleanup(func() { removeCgroup(t, dir) })
	joinCgroup(t, []string{filepath.Join(dir, "cgroup.procs")})

	controllers, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		t.Fatal(err)
	}
	hasMemory := strings.Contains(string(controllers), "memory")
	r := NewReader(Config{Root: root, Unified: true})
	var s Sample
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err = r.Read(context.Background(), group)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		charged := s.CPU != nil && s.CPU.UsageNanos > 0 && (!hasMemory || s.Memory != nil && s.Memory.Usage > 0)
		if charged || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s.CPU == nil || s.CPU.UsageNanos == 0 {
		t.Errorf("cpu = %+v, want the exec's CPU time", s.CPU)
	}
	if (s.Memory != nil) != hasMemory {
		t.Errorf("memory = %+v with controllers %q", s.Memory, controllers)
	}
	if hasMemory && s.Memory.Usage == 0 {
		t.Errorf("memory = %+v, want non-zero usage", s.Memory)
	}
}

// joinCgroup starts a shell that writes itself into each cgroup.procs file
// and then execs sleep, so that the exec's CPU time and pages are charged
// to the cgroup. The process is killed at cleanup, before cgroups made
// earlier are removed.
func joinCgroup(t *testing.T, procs []string) {
	t.Helper()
	script := "for f in " + strings.Join(procs, " ") + "; do echo $$ > $f || exit 1; done; echo joined; exec sleep 300"
	cmd := exec.Command("/bin/sh", "-c", script)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "joined\n" {
		t.Fatalf("child did not join the cgroup: %q, %v", line, err)
	}
}

func removeCgroup(t *testing.T, dir string) {
	t.Helper()
	// rmdir fails while the killed child is still being torn down.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("remove cgroup %s: %v", dir, err)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
