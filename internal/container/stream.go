package container

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/monitor"
	"github.com/crib-dev/crib/internal/ociruntime"
	"github.com/crib-dev/crib/internal/ocispec"
)

// Streams are a streaming client's ends of an exec or attach session. Nil
// fields are streams the client did not ask for. With a terminal, Stderr
// is not used and Resize carries the client's terminal size.
type Streams struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Resize         <-chan ociruntime.WinSize
	// Timeout: see ociruntime.ExecIO (Exec only).
	Timeout time.Duration
}

// Exec runs cmd in a running container, with a terminal when tty is set,
// joined to the client's streams, and returns its exit code once it
// exited. When ctx ends first the process is killed.
func (m *Manager) Exec(ctx context.Context, id string, cmd []string, tty bool, s Streams) (int, error) {
	if len(cmd) == 0 {
		return -1, fmt.Errorf("cmd is empty: %w", errdefs.ErrInvalidArgument)
	}
	e, c, err := m.running(id)
	if err != nil {
		return -1, err
	}
	rt, err := m.runtime(c.RuntimeHandler)
	if err != nil {
		return -1, err
	}
	// A removal may take the bundle away before its spec is read.
	spec, err := m.readSpec(c.ID)
	if err != nil {
		return -1, m.processError(ctx, e, rt, err)
	}
	code, err := rt.Exec(ctx, c.ID, ocispec.BuildExecProcess(spec, cmd, tty), ociruntime.ExecIO{
		Stdin: s.Stdin, Stdout: s.Stdout, Stderr: s.Stderr, Resize: s.Resize, Timeout: s.Timeout,
	})
	if err != nil {
		return -1, m.processError(ctx, e, rt, err)
	}
	return code, nil
}

// Attach joins the client's streams to a running container through its
// monitor: the container's output from now on, the client's input to the
// container's stdin (when it has one) and, for a terminal, resizes. It
// returns once the container exited and its output went out, or when ctx
// ends.
func (m *Manager) Attach(ctx context.Context, id string, s Streams) error {
	e, c, err := m.running(id)
	if err != nil {
		return err
	}
	if !c.Config.GetStdin() {
		s.Stdin = nil
	}
	client, err := monitor.Dial(ctx, m.socket(c.ID))
	if err == nil {
		err = client.Attach(ctx, monitor.AttachIO{Stdin: s.Stdin, Stdout: s.Stdout, Stderr: s.Stderr, Resize: s.Resize})
	}
	if err != nil {
		// A monitor that went with its container is the container's end.
		return fmt.Errorf("attach to %s: %w", c.ID, m.monitorError(ctx, e, c, err))
	}
	return nil
}

// monitorError is processError for a failure err of a call to c's monitor.
func (m *Manager) monitorError(ctx context.Context, e *entry, c Container, err error) error {
	rt, rtErr := m.runtime(c.RuntimeHandler)
	if rtErr != nil {
		return err
	}
	return m.processError(ctx, e, rt, err)
}
