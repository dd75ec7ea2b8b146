package monitor_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/crib-dev/crib/internal/monitor"
	"github.com/crib-dev/crib/internal/ociruntime"
	"github.com/crib-dev/crib/internal/ociruntime/ociruntimetest"
)

// env is one container under a monitor, with everything in temp dirs.
type env struct {
	rt  *ociruntime.Runtime
	cfg monitor.StartConfig
}

func newEnv(t *testing.T, args []string, edit func(*specs.Spec)) *env {
	t.Helper()
	ociruntimetest.RequireRuntime(t)
	rt := ociruntimetest.NewRuntime(t)
	id := ociruntimetest.ID(t)
	bundle := ociruntimetest.NewBundle(t, id, args, edit)
	dir := t.TempDir()
	// Unix socket paths are short; t.TempDir paths with test names may not be.
	sockDir, err := os.MkdirTemp("", "crib-mon-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{rt: rt, cfg: monitor.StartConfig{
		ID:            id,
		Bundle:        bundle,
		RuntimeBinary: "runc",
		RuntimeRoot:   rt.Root,
		LogPath:       filepath.Join(dir, "container.log"),
		ExitFile:      filepath.Join(dir, "exit.json"),
		Socket:        filepath.Join(sockDir, "monitor.sock"),
		PidFile:       filepath.Join(dir, "init.pid"),
		MonitorLog:    filepath.Join(dir, "monitor.log"),
		Binary:        self,
	}}
	t.Cleanup(func() {
		ociruntimetest.Cleanup(t, rt, id)
		if t.Failed() {
			b, _ := os.ReadFile(e.cfg.MonitorLog)
			t.Logf("monitor log:\n%s", b)
		}
	})
	return e
}

// start starts the monitor and registers a check that it is gone at the
// end of the test.
func (e *env) start(t *testing.T) monitor.Handle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := monitor.Start(ctx, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.cleanupMonitor(t, h.MonitorPid)
	return h
}

// cleanupMonitor registers the end of the container and then of its
// monitor (cleanups run last-in first-out, so the container's deletion
// registered by newEnv would come too late).
func (e *env) cleanupMonitor(t *testing.T, pid int) {
	t.Cleanup(func() {
		ociruntimetest.Cleanup(t, e.rt, e.cfg.ID)
		waitGone(t, pid)
	})
}

func (e *env) run(t *testing.T) monitor.Handle {
	t.Helper()
	h := e.start(t)
	if err := e.rt.Start(context.Background(), e.cfg.ID); err != nil {
		t.Fatal(err)
	}
	return h
}

func (e *env) wait(t *testing.T) monitor.Exit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ex, err := monitor.WaitExit(ctx, e.cfg.Socket, e.cfg.ExitFile)
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// waitGone waits for pid to exit, killing it when it takes too long.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Errorf("process %d still alive; killing it", pid)
			_ = unix.Kill(pid, unix.SIGKILL)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processesMentioning lists pids whose command line contains s.
func processesMentioning(s string) []string {
	var pids []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			pids = append(pids, filepath.Base(d))
		}
	}
	return pids
}
