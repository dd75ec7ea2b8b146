package monitor_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crib-dev/crib/internal/monitor"
)

// idleMonitors lists the pids of this test binary's monitors that were
// started idle, but for busy ones (which keep their command line).
func idleMonitors(t *testing.T, busy ...int) []int {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) >= 3 && args[0] == self && args[1] == "monitor" && args[2] == "idle" {
			var pid int
			for _, c := range e.Name() {
				pid = pid*10 + int(c-'0')
			}
			if alive(pid) && !slices.Contains(busy, pid) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func waitIdle(t *testing.T, n int, busy ...int) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := idleMonitors(t, busy...)
		if len(pids) == n || time.Now().After(deadline) {
			if len(pids) != n {
				t.Fatalf("idle monitors %v, want %d", pids, n)
			}
			return pids
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPool(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pool := monitor.NewPool(self, 1)
	t.Cleanup(pool.Close)
	pool.Warm()
	idle := waitIdle(t, 1)

	// The waiting monitor takes the first container.
	e := newEnv(t, []string{"sh", "-c", "echo pooled; exit 4"}, nil)
	e.cfg.Run = true
	h, err := pool.Start(context.Background(), e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.cleanupMonitor(t, h.MonitorPid)
	if h.MonitorPid != idle[0] {
		t.Errorf("container got monitor %d, want the idle one %d", h.MonitorPid, idle[0])
	}
	if ex := e.wait(t); ex.ExitCode != 4 {
		t.Errorf("exit code %d, want 4", ex.ExitCode)
	}
	if recs := readLog(t, e.cfg.LogPath); len(recs) != 1 || recs[0].Content != "pooled" {
		t.Errorf("log records %v", recs)
	}

	// The pool refills; a waiting monitor that was killed is skipped.
	idle = waitIdle(t, 1)
	if err := syscall.Kill(idle[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, idle[0])
	e2 := newEnv(t, []string{"sleep", "3600"}, nil)
	e2.cfg.Run = true
	h2, err := pool.Start(context.Background(), e2.cfg)
	if err != nil {
		t.Fatalf("Start after the idle monitor was killed: %v", err)
	}
	e2.cleanupMonitor(t, h2.MonitorPid)
	if st, err := e2.rt.State(context.Background(), e2.cfg.ID); err != nil || st.Status != "running" {
		t.Errorf("container state %+v, %v; want running", st, err)
	}

	// Closing the pool lets the waiting monitors go; the busy one stays.
	idle = waitIdle(t, 1, h2.MonitorPid)
	pool.Close()
	waitGone(t, idle[0])
	if !alive(h2.MonitorPid) {
		t.Error("closing the pool ended a monitor that has a container")
	}
}

func TestPoolRefusesBadConfig(t *testing.T) {
	pool := monitor.NewPool("/nonexistent", 1)
	defer pool.Close()
	if _, err := pool.Start(context.Background(), monitor.StartConfig{}); err == nil {
		t.Fatal("Start with an empty config succeeded")
	}
}
