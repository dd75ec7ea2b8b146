package ociruntime

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"time"
)

// waitDelay bounds how long a finished runtime command may keep us waiting
// for its output pipes to close (a child it left behind may hold them).
const waitDelay = 500 * time.Millisecond

// shimGrace is how long a cancelled exec shim has to kill the runtime and
// the exec'd process and exit before it is killed itself.
const shimGrace = 10 * time.Second

// Runtime runs one OCI runtime binary with fixed global options. The zero
// value is not usable: Binary must be set. Runtime is safe for concurrent
// use; it holds no state of its own.
type Runtime struct {
	// Binary is the runtime executable, a path or a name looked up in PATH
	// ("runc", "/usr/bin/crun").
	Binary string
	// Root is the runtime's state directory (--root). Empty means the
	// runtime's default (/run/runc for runc).
	Root string
	// SystemdCgroup makes the runtime manage cgroups through systemd
	// (--systemd-cgroup).
	SystemdCgroup bool
	// Log is an optional file the runtime appends its own log to (--log).
	// Empty means the runtime logs to its standard error, where this
	// package reads it.
	Log string
	// ExecShim is the argument vector prefix of a command that runs
	// ExecShimMain with the arguments appended (for crib: its own binary
	// and the hidden `monitor exec-shim` subcommand). Empty means Exec runs
	// the runtime in the foreground, which then waits for every process
	// holding the exec's output pipes.
	ExecShim []string
	// Support is what the runtime makes possible on this host, found by
	// whoever set it up (its features and the kernel's).
	Support Support
}

// globalArgs returns the options that precede every runtime command.
// logFile overrides r.Log when not empty.
func (r *Runtime) globalArgs(logFile string) []string {
	var args []string
	if r.Root != "" {
		args = append(args, "--root", r.Root)
	}
	if logFile == "" {
		logFile = r.Log
	}
	if logFile != "" {
		args = append(args, "--log", logFile)
	}
	args = append(args, "--log-format", "json")
	if r.SystemdCgroup {
		args = append(args, "--systemd-cgroup")
	}
	return args
}

// command builds an exec.Cmd for one runtime command.
func (r *Runtime) command(ctx context.Context, args ...string) *exec.Cmd {
	full := append(r.globalArgs(""), args...)
	cmd := exec.CommandContext(ctx, r.Binary, full...)
	cmd.WaitDelay = waitDelay
	return cmd
}

// run runs one runtime command to completion and returns its standard
// output. stdin may be nil. A failure carries the runtime's message,
// classified.
func (r *Runtime) run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := r.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin = stdin
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("%s %s: %w", r.Binary, args[0], ctxErr)
		}
		return nil, runtimeError(r.Binary, args[0], err, stderr.Bytes())
	}
	return stdout.Bytes(), nil
}
