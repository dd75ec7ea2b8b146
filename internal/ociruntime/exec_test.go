package ociruntime_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/crib-dev/crib/internal/ociruntime"
	"github.com/crib-dev/crib/internal/ociruntime/ociruntimetest"
	"github.com/crib-dev/crib/internal/testutil"
)

// runningContainer creates and starts a long-sleeping busybox container.
func runningContainer(t *testing.T, r *ociruntime.Runtime) string {
	t.Helper()
	id := ociruntimetest.ID(t)
	bundle := ociruntimetest.NewBundle(t, id, []string{"sleep", "3600"}, nil)
	ociruntimetest.Create(t, r, id, bundle)
	if err := r.Start(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	return id
}

func process(args ...string) specs.Process {
	return specs.Process{Args: args, Env: []string{"PATH=/bin"}, Cwd: "/"}
}

// execModes runs a test against both ways of running exec.
func execModes(t *testing.T, f func(t *testing.T, r *ociruntime.Runtime, id string)) {
	ociruntimetest.RequireRuntime(t)
	r := ociruntimetest.NewRuntime(t)
	id := runningContainer(t, r)
	for _, mode := range []struct {
		name string
		shim []string
	}{
		{"shim", shimArgv(t)},
		{"foreground", nil},
	} {
		t.Run(mode.name, func(t *testing.T) {
			rr := *r
			rr.ExecShim = mode.shim
			f(t, &rr, id)
		})
	}
}

func TestExecOutput(t *testing.T) {
	execModes(t, func(t *testing.T, r *ociruntime.Runtime, id string) {
		tests := []struct {
			name             string
			args             []string
			stdin            string
			wantOut, wantErr string
			wantCode         int
		}{
			{"streams and exit code", []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, "", "out\n", "err\n", 3},
			{"stdin", []string{"cat"}, "hello\n", "hello\n", "", 0},
			{"killed by signal", []string{"sh", "-c", "kill -9 $$"}, "", "", "", 137},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				eio := ociruntime.ExecIO{Stdout: &stdout, Stderr: &stderr}
				if tc.stdin != "" {
					eio.Stdin = strings.NewReader(tc.stdin)
				}
				code, err := r.Exec(context.Background(), id, process(tc.args...), eio)
				if err != nil {
					t.Fatal(err)
				}
				got := []any{code, stdout.String(), stderr.String()}
				want := []any{tc.wantCode, tc.wantOut, tc.wantErr}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("exec (-want +got):\n%s", d)
				}
			})
		}
	})
}

func TestExecUnknownBinary(t *testing.T) {
	execModes(t, func(t *testing.T, r *ociruntime.Runtime, id string) {
		_, err := r.Exec(context.Background(), id, process("/no/such/binary"), ociruntime.ExecIO{})
		if err == nil || !strings.Contains(err.Error(), "no such file") {
			t.Fatalf("got %v, want an error naming the missing file", err)
		}
	})
}

func TestExecTimeoutKillsProcess(t *testing.T) {
	execModes(t, func(t *testing.T, r *ociruntime.Runtime, id string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		_, err := r.Exec(ctx, id, process("sleep", "61"), ociruntime.ExecIO{})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want deadline exceeded", err)
		}
		if el := time.Since(start); el > 10*time.Second {
			t.Fatalf("exec returned after %v", el)
		}
		var ps bytes.Buffer
		if _, err := r.Exec(context.Background(), id, process("ps"), ociruntime.ExecIO{Stdout: &ps}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(ps.String(), "sleep 61") {
			t.Fatalf("timed out process still runs:\n%s", ps.String())
		}
	})
}

// TestExecCancelWaitsForSlowShim cancels an exec whose shim is slow to
// clean up: the shim must get the time to kill the exec'd process rather
// than be killed itself and leave that process running.
func TestExecCancelWaitsForSlowShim(t *testing.T) {
	ociruntimetest.RequireRuntime(t)
	r := ociruntimetest.NewRuntime(t)
	id := runningContainer(t, r)
	r.ExecShim = slowShimArgv(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out testutil.SyncBuffer
	done := make(chan error, 1)
	go func() {
		_, err := r.Exec(ctx, id, process("sh", "-c", "echo started; exec sleep 63"), ociruntime.ExecIO{Stdout: &out})
		done <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "started"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the exec'd process never started")
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	r.ExecShim = shimArgv(t)
	var ps bytes.Buffer
	if _, err := r.Exec(context.Background(), id, process("ps", "-o", "args"), ociruntime.ExecIO{Stdout: &ps}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ps.String(), "sleep 63") {
		t.Fatalf("the cancelled exec's process still runs:\n%s", ps.String())
	}
}

func TestExecBackgroundChildDoesNotBlock(t *testing.T) {
	ociruntimetest.RequireRuntime(t)
	r := ociruntimetest.NewRuntime(t)
	r.ExecShim = shimArgv(t)
	id := runningContainer(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout bytes.Buffer
	code, err := r.Exec(ctx, id, process("sh", "-c", "echo hi; sleep 62 &"), ociruntime.ExecIO{Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]any{0, "hi\n"}, []any{code, stdout.String()}); d != "" {
		t.Errorf("exec (-want +got):\n%s", d)
	}
}

// TestExecTimeoutCountsFromStart runs exec through a runtime that takes
// 1.5 s to start the process, as runc exec may on a loaded or emulated host:
// a 1 s timeout counts from the process's start (as containerd's does), so
// a quick command completes, and a slow one is still killed.
func TestExecTimeoutCountsFromStart(t *testing.T) {
	execModes(t, func(t *testing.T, r *ociruntime.Runtime, id string) {
		slow := filepath.Join(t.TempDir(), "slow-runtime")
		script := "#!/bin/sh\nfor a; do [ \"$a\" = exec ] && sleep 1.5 && break; done\nexec " + r.Binary + " \"$@\"\n"
		if err := os.WriteFile(slow, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		rr := *r
		rr.Binary = slow
		var out bytes.Buffer
		code, err := rr.Exec(context.Background(), id, process("echo", "quick"), ociruntime.ExecIO{Stdout: &out, Timeout: time.Second})
		if err != nil || code != 0 || out.String() != "quick\n" {
			t.Fatalf("quick command: code %d, output %q, err %v; want 0, \"quick\\n\", nil", code, out.String(), err)
		}
		start := time.Now()
		_, err = rr.Exec(context.Background(), id, process("sleep", "62"), ociruntime.ExecIO{Timeout: time.Second})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("slow command: got %v, want deadline exceeded", err)
		}
		if el := time.Since(start); el > 20*time.Second {
			t.Fatalf("slow command: exec returned after %v", el)
		}
		var ps bytes.Buffer
		if _, err := r.Exec(context.Background(), id, process("ps"), ociruntime.ExecIO{Stdout: &ps}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(ps.String(), "sleep 62") {
			t.Fatalf("timed out process still runs:\n%s", ps.String())
		}
	})
}
