package streaming

import (
	"context"
	"fmt"
	"io"

	criremote "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/ociruntime"
	"github.com/crib-dev/crib/internal/sandbox"
)

// Containers is what the sessions need of the container manager.
type Containers interface {
	Exec(ctx context.Context, id string, cmd []string, tty bool, s container.Streams) (int, error)
	Attach(ctx context.Context, id string, s container.Streams) error
}

// Sandboxes is what port forwarding needs of the sandbox manager.
type Sandboxes interface {
	Get(id string) (sandbox.Sandbox, error)
}

// Runtime implements k8s.io/cri-streaming's streaming.Runtime.
type Runtime struct {
	containers Containers
	sandboxes  Sandboxes
}

// NewRuntime returns a Runtime over the managers.
func NewRuntime(containers Containers, sandboxes Sandboxes) *Runtime {
	return &Runtime{containers: containers, sandboxes: sandboxes}
}

// Exec runs cmd in the container joined to the client's streams and
// returns once it exited: nil for exit code 0, an ExitError otherwise.
func (r *Runtime) Exec(ctx context.Context, id string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan criremote.TerminalSize) error {
	s := streams(in, out, errOut)
	if tty {
		s.Stderr = nil
		s.Resize = resizes(ctx, resize)
	}
	code, err := r.containers.Exec(ctx, id, cmd, tty, s)
	if err != nil {
		return err
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: code}
	}
	return nil
}

// Attach joins the client's streams to the running container until it
// exits or the client goes away.
func (r *Runtime) Attach(ctx context.Context, id string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan criremote.TerminalSize) error {
	s := streams(in, out, errOut)
	if tty {
		s.Resize = resizes(ctx, resize)
	}
	return r.containers.Attach(ctx, id, s)
}

// streams turns the library's streams, nil interfaces for those the
// client did not ask for, into container.Streams.
func streams(in io.Reader, out, errOut io.WriteCloser) container.Streams {
	var s container.Streams
	if in != nil {
		s.Stdin = in
	}
	if out != nil {
		s.Stdout = out
	}
	if errOut != nil {
		s.Stderr = errOut
	}
	return s
}

// resizes relays the library's terminal sizes as ociruntime's until in
// closes or ctx ends; nil in gives nil.
func resizes(ctx context.Context, in <-chan criremote.TerminalSize) <-chan ociruntime.WinSize {
	if in == nil {
		return nil
	}
	out := make(chan ociruntime.WinSize)
	go func() {
		defer close(out)
		for {
			select {
			case size, ok := <-in:
				if !ok {
					return
				}
				select {
				case out <- ociruntime.WinSize{Width: size.Width, Height: size.Height}:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
