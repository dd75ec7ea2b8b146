package ociruntime

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// CheckpointOpts are the options of Checkpoint.
type CheckpointOpts struct {
	// ImagePath is the directory CRIU writes its images to; WorkPath
	// the one it writes its log (dump.log) and stats-dump to.
	ImagePath, WorkPath string
	// LeaveRunning keeps the container running once it is dumped.
	LeaveRunning bool
	// TCPEstablished lets CRIU dump established TCP connections rather
	// than fail on them (runc's --tcp-established).
	TCPEstablished bool
	// Criu is the criu binary, or "" for criu in PATH. runc has no
	// option naming it: it runs "criu" from PATH, so the binary's
	// directory is put first in the runtime's PATH, and the binary must
	// be named criu.
	Criu string
	// NoBreakpoints makes CRIU trace syscalls where it would set a
	// hardware breakpoint (CRIU_FAULT=130, its switch for this).
	NoBreakpoints bool
}

// checkpointGrace is how long a cancelled checkpoint is left to finish
// by itself before the runtime and CRIU are killed.
const checkpointGrace = 5 * time.Second

// Checkpoint dumps container id's processes with CRIU (runc checkpoint).
// Its errors do not name the container: the caller's do.
//
// Once ctx is done, the runtime has checkpointGrace to finish (a dump
// about to end resumes the container itself); then it and its CRIU are
// killed and the container resumed, should CRIU have left its cgroup
// frozen. done, when not nil, is called once the runtime has exited, so
// that the caller can remove what it wrote.
func (r *Runtime) Checkpoint(ctx context.Context, id string, o CheckpointOpts, done func()) error {
	args := append(r.globalArgs(""), "checkpoint", "--image-path", o.ImagePath, "--work-path", o.WorkPath)
	if o.LeaveRunning {
		args = append(args, "--leave-running")
	}
	if o.TCPEstablished {
		args = append(args, "--tcp-established")
	}
	args = append(args, id)
	// Not CommandContext: a cancelled ctx gets the grace first.
	cmd := exec.Command(r.Binary, args...)
	cmd.WaitDelay = waitDelay
	// Its own process group, which CRIU (its child) joins: one kill
	// reaches both.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = CriuEnv(os.Environ(), o.Criu, o.NoBreakpoints)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		if done != nil {
			done()
		}
		return fmt.Errorf("%s checkpoint: %w", r.Binary, err)
	}
	exited := make(chan error, 1)
	go func() {
		exited <- cmd.Wait()
		if done != nil {
			done()
		}
	}()
	var err error
	select {
	case err = <-exited:
	case <-ctx.Done():
		select {
		case <-exited:
		case <-time.After(checkpointGrace):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			// A CRIU killed between freezing and thawing the cgroup
			// leaves the container paused; resume fails on one that
			// is not.
			_, _ = r.run(context.Background(), nil, "resume", id)
		}
		return fmt.Errorf("%s checkpoint: %w", r.Binary, ctx.Err())
	}
	if err != nil {
		msg := LastError(stderr.Bytes())
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("%s checkpoint: %w", r.Binary, Classify(msg))
	}
	return nil
}

// CriuEnv is env for a runtime that runs criu: criu's directory first in
// PATH (runc runs "criu" from it), and with noBreakpoints CRIU's switch to
// trace syscalls rather than set hardware breakpoints (CRIU_FAULT=130,
// which it reads from the environment runc passes on).
func CriuEnv(env []string, criu string, noBreakpoints bool) []string {
	if criu != "" {
		env = withPathFirst(env, filepath.Dir(criu))
	}
	if noBreakpoints {
		env = append(env, "CRIU_FAULT=130")
	}
	return env
}

// withPathFirst returns env with dir first in its PATH.
func withPathFirst(env []string, dir string) []string {
	out := make([]string, 0, len(env)+1)
	path := dir
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			if v != "" {
				path = dir + string(os.PathListSeparator) + v
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, "PATH="+path)
}

// Pause freezes container id's processes (a pod checkpoint's one cut:
// every container frozen before any is dumped; CRIU leaves a frozen
// cgroup frozen).
func (r *Runtime) Pause(ctx context.Context, id string) error {
	_, err := r.run(ctx, nil, "pause", id)
	return err
}

// Resume thaws a paused container; one that is not paused is an error.
func (r *Runtime) Resume(ctx context.Context, id string) error {
	_, err := r.run(ctx, nil, "resume", id)
	return err
}
