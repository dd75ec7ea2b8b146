package ociruntime

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/containerd/errdefs"
)

// execTerminal runs an exec whose process has a terminal: the runtime
// makes the pty and sends its master on a console socket; the process's
// input and output then go through the master. It needs the exec shim: a
// runtime in the foreground would want the terminal to be its own stdio.
func (r *Runtime) execTerminal(ctx context.Context, id string, args []string, pidFile, logFile string, eio ExecIO) (int, error) {
	if len(r.ExecShim) == 0 {
		return -1, fmt.Errorf("exec in container %s: a terminal needs the exec shim: %w", id, errdefs.ErrNotImplemented)
	}
	cs, err := NewConsoleSocket("")
	if err != nil {
		return -1, fmt.Errorf("exec in container %s: %w", id, err)
	}
	defer cs.Close()
	args = append(args, "--tty", "--console-socket", cs.Path())
	recvCtx, stopRecv := context.WithCancel(ctx)
	defer stopRecv()
	started := make(chan *terminal, 1)
	go func() {
		master, err := cs.Receive(recvCtx)
		if err != nil {
			started <- nil
			return
		}
		started <- startTerminal(master, eio)
	}()
	// The runtime's own stdio is not the process's: /dev/null.
	code, err := r.execArgs(ctx, id, args, pidFile, logFile, ExecIO{})
	var t *terminal
	select {
	case t = <-started:
	case <-time.After(waitDelay):
		// The runtime failed before it sent a master.
		stopRecv()
		t = <-started
	}
	if t != nil {
		t.finish(waitDelay)
	}
	if err == nil && t == nil {
		return -1, fmt.Errorf("exec in container %s: the runtime sent no terminal", id)
	}
	return code, err
}

// terminal copies between a pty master and an exec's streams.
type terminal struct {
	master *os.File
	// out closes once the output copy ended.
	out chan struct{}
	// stop ends the resize loop.
	stop chan struct{}
}

func startTerminal(master *os.File, eio ExecIO) *terminal {
	t := &terminal{master: master, out: make(chan struct{}), stop: make(chan struct{})}
	go func() {
		defer close(t.out)
		w := eio.Stdout
		if w == nil {
			w = io.Discard
		}
		// Ends with EIO once every holder of the pty's other end is gone,
		// or when finish cuts it.
		_, _ = io.Copy(w, master)
	}()
	if eio.Stdin != nil {
		// Ends when the reader does, or on the first write after finish
		// closed the master.
		go func() { _, _ = io.Copy(master, eio.Stdin) }()
	}
	if eio.Resize != nil {
		go func() {
			for {
				select {
				case size, ok := <-eio.Resize:
					if !ok {
						return
					}
					_ = SetWinSize(master, size)
				case <-t.stop:
					return
				}
			}
		}()
	}
	return t
}

// finish lets the output drain for at most timeout after the process
// exited (a background child may hold the pty), then closes the master.
func (t *terminal) finish(timeout time.Duration) {
	select {
	case <-t.out:
	case <-time.After(timeout):
		_ = t.master.SetReadDeadline(time.Now())
		<-t.out
	}
	close(t.stop)
	_ = t.master.Close()
}
