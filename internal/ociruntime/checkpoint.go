package ociruntime

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// CheckpointOpts are the options of Checkpoint.
type CheckpointOpts struct {
	// ImagePath is the directory CRIU writes its images to; WorkPath
	// the one it writes its log (dump.log) and stats-dump to.
	ImagePath, WorkPath string
	// LeaveRunning keeps the container running once it is dumped.
	LeaveRunning bool
	// Criu is the criu binary, or "" for criu in PATH. runc has no
	// option naming it: it runs "criu" from PATH, so the binary's
	// directory is put first in the runtime's PATH, and the binary must
	// be named criu.
	Criu string
}

// Checkpoint dumps the container's processes with CRIU (runc checkpoint).
//
// Cancelling ctx stops the wait, not the dump: a CRIU killed halfway
// leaves the container's tasks seized or frozen, while one left to finish
// resumes them (with LeaveRunning). The runtime goes on in the background
// and done, when not nil, is called once it has exited, so that the
// caller can remove what it wrote.
func (r *Runtime) Checkpoint(ctx context.Context, id string, o CheckpointOpts, done func()) error {
	args := append(r.globalArgs(""), "checkpoint", "--image-path", o.ImagePath, "--work-path", o.WorkPath)
	if o.LeaveRunning {
		args = append(args, "--leave-running")
	}
	args = append(args, id)
	// Not CommandContext: the process must outlive a cancelled ctx.
	cmd := exec.Command(r.Binary, args...)
	cmd.WaitDelay = waitDelay
	if o.Criu != "" {
		cmd.Env = withPathFirst(os.Environ(), filepath.Dir(o.Criu))
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		if done != nil {
			done()
		}
		return fmt.Errorf("checkpoint container %s: %w", id, err)
	}
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		exited <- err
		if done != nil {
			done()
		}
	}()
	select {
	case err := <-exited:
		if err != nil {
			msg := LastError(stderr.Bytes())
			if msg == "" {
				msg = err.Error()
			}
			// runc's message names the CRIU log; the log is the
			// caller's to keep or remove.
			return fmt.Errorf("checkpoint container %s: %s checkpoint: %w", id, r.Binary, Classify(msg))
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("checkpoint container %s: %w", id, ctx.Err())
	}
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
