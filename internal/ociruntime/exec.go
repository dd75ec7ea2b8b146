package ociruntime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// ExecIO is the stdio of an exec'd process. Nil fields mean /dev/null.
// For a terminal process, Stdin and Stdout are joined to the pty, Stderr
// is not used and Resize events resize the pty; it is ignored otherwise.
type ExecIO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Resize <-chan WinSize
	// Timeout, when positive, kills the process Timeout after the runtime
	// started it (wrote its pid file): the runtime's own start, slow on a
	// loaded or emulated host, is not the command's time, as containerd
	// counts it. Exec then returns an error wrapping
	// context.DeadlineExceeded.
	Timeout time.Duration
}

// Exec runs process p inside container id and waits for it to exit,
// returning its exit code (128+signal when it was killed by a signal).
//
// With ExecShim set, the runtime runs detached under the shim, which reaps
// the process and reports its status: Exec then returns as soon as the
// process exits, even when a background child it spawned still holds
// stdout or stderr open (the pipes are abandoned after a short delay).
// Without a shim the runtime runs in the foreground and itself waits for
// every holder of the pipes.
//
// When ctx is done, the process and its process group are killed and Exec
// returns promptly with an error wrapping ctx.Err() (or, for eio.Timeout,
// context.DeadlineExceeded).
func (r *Runtime) Exec(ctx context.Context, id string, p specs.Process, eio ExecIO) (int, error) {
	dir, err := os.MkdirTemp("", "crib-exec-")
	if err != nil {
		return -1, fmt.Errorf("exec in container %s: %w", id, err)
	}
	defer os.RemoveAll(dir)
	procFile := filepath.Join(dir, "process.json")
	pidFile := filepath.Join(dir, "pid")
	logFile := filepath.Join(dir, "runtime.log")
	body, err := json.Marshal(p)
	if err != nil {
		return -1, fmt.Errorf("exec in container %s: encode process: %w", id, err)
	}
	if err := os.WriteFile(procFile, body, 0o600); err != nil {
		return -1, fmt.Errorf("exec in container %s: %w", id, err)
	}
	if eio.Timeout > 0 {
		var stop func()
		ctx, stop = timeoutAfterStart(ctx, pidFile, eio.Timeout)
		defer stop()
	}
	args := append(r.globalArgs(logFile), "exec", "--process", procFile, "--pid-file", pidFile)
	if p.Terminal {
		return r.execTerminal(ctx, id, args, pidFile, logFile, eio)
	}
	return r.execArgs(ctx, id, args, pidFile, logFile, eio)
}

// execArgs runs the exec command line args (without the container id)
// under the shim, or in the foreground without one.
func (r *Runtime) execArgs(ctx context.Context, id string, args []string, pidFile, logFile string, eio ExecIO) (int, error) {
	if len(r.ExecShim) > 0 {
		args = append(args, "--detach", id)
		return r.execShimmed(ctx, id, args, pidFile, logFile, eio)
	}
	return r.execForeground(ctx, id, append(args, id), pidFile, logFile, eio)
}

// execForeground runs `runtime exec` directly and takes the exit code from
// the runtime's own exit status.
func (r *Runtime) execForeground(ctx context.Context, id string, args []string, pidFile, logFile string, eio ExecIO) (int, error) {
	cmd := exec.CommandContext(ctx, r.Binary, args...)
	setExecIO(cmd, eio)
	cmd.Cancel = func() error {
		killExecProcess(pidFile)
		return cmd.Process.Kill()
	}
	waitErr := cmd.Run()
	if ctx.Err() != nil {
		killExecProcess(pidFile)
		return -1, fmt.Errorf("exec in container %s: %w", id, context.Cause(ctx))
	}
	if msg := LastErrorInFile(logFile); msg != "" {
		return -1, fmt.Errorf("exec in container %s: %w", id, Classify(msg))
	}
	var exitErr *exec.ExitError
	switch {
	case waitErr == nil:
		return 0, nil
	case errors.As(waitErr, &exitErr) && exitErr.ExitCode() >= 0:
		return exitErr.ExitCode(), nil
	case errors.Is(waitErr, exec.ErrWaitDelay):
		return cmd.ProcessState.ExitCode(), nil
	}
	return -1, fmt.Errorf("exec in container %s: %w", id, waitErr)
}

// execShimmed runs `runtime exec --detach` under the exec shim, which
// reports the exit status on a pipe.
func (r *Runtime) execShimmed(ctx context.Context, id string, args []string, pidFile, logFile string, eio ExecIO) (int, error) {
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return -1, fmt.Errorf("exec in container %s: %w", id, err)
	}
	defer statusR.Close()
	argv := append(append([]string{}, r.ExecShim[1:]...), pidFile, r.Binary)
	// Not CommandContext: its WaitDelay would SIGKILL a shim that is still
	// killing the runtime and the exec'd process after a cancel (slow on a
	// loaded host), orphaning that process. Here WaitDelay only bounds the
	// pipes, and a cancelled shim gets shimGrace to clean up.
	cmd := exec.Command(r.ExecShim[0], append(argv, args...)...)
	setExecIO(cmd, eio)
	cmd.ExtraFiles = []*os.File{statusW}
	if err := cmd.Start(); err != nil {
		statusW.Close()
		return -1, fmt.Errorf("exec in container %s: start shim: %w", id, err)
	}
	statusW.Close()
	exited := make(chan struct{})
	go func() {
		select {
		case <-exited:
			return
		case <-ctx.Done():
		}
		killExecProcess(pidFile)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(shimGrace):
			_ = cmd.Process.Kill()
		}
	}()
	waitErr := cmd.Wait()
	close(exited)
	if ctx.Err() != nil {
		killExecProcess(pidFile)
		return -1, fmt.Errorf("exec in container %s: %w", id, context.Cause(ctx))
	}
	_ = statusR.SetReadDeadline(time.Now().Add(waitDelay))
	res, err := readShimResult(statusR)
	if err != nil {
		return -1, fmt.Errorf("exec in container %s: shim: %w (wait: %v)", id, err, waitErr)
	}
	if res.Error != "" {
		msg := LastErrorInFile(logFile)
		if msg == "" {
			msg = res.Error
		}
		return -1, fmt.Errorf("exec in container %s: %w", id, Classify(msg))
	}
	return res.ExitCode, nil
}

// startPoll is how often timeoutAfterStart looks for the pid file.
const startPoll = 5 * time.Millisecond

// timeoutAfterStart returns a ctx cancelled with context.DeadlineExceeded
// timeout after pidFile appears, and a stop to call once the exec is over.
func timeoutAfterStart(ctx context.Context, pidFile string, timeout time.Duration) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(startPoll)
		defer tick.Stop()
		for {
			if _, err := os.Stat(pidFile); err == nil {
				break
			}
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-t.C:
			cancel(context.DeadlineExceeded)
		case <-done:
		case <-ctx.Done():
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}

func setExecIO(cmd *exec.Cmd, eio ExecIO) {
	cmd.Stdin = eio.Stdin
	cmd.Stdout = eio.Stdout
	cmd.Stderr = eio.Stderr
	cmd.WaitDelay = waitDelay
}

// killExecProcess kills the exec'd process named in pidFile and its
// process group, ignoring processes that are already gone.
func killExecProcess(pidFile string) {
	pid := readPid(pidFile)
	if pid <= 0 {
		return
	}
	_ = unix.Kill(pid, unix.SIGKILL)
	_ = unix.Kill(-pid, unix.SIGKILL)
}
