package ociruntime_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/ociruntime"
	"github.com/crib-dev/crib/internal/ociruntime/ociruntimetest"
	"github.com/crib-dev/crib/internal/testutil"
)

// gatedReader returns its data only once gate is closed, then EOF.
type gatedReader struct {
	gate <-chan struct{}
	r    io.Reader
}

func (g *gatedReader) Read(p []byte) (int, error) {
	<-g.gate
	return g.r.Read(p)
}

func TestExecTerminalNeedsShim(t *testing.T) {
	ociruntimetest.RequireRuntime(t)
	r := ociruntimetest.NewRuntime(t)
	p := process("true")
	p.Terminal = true
	_, err := r.Exec(context.Background(), "any", p, ociruntime.ExecIO{})
	if !errdefs.IsNotImplemented(err) {
		t.Fatalf("terminal exec without a shim = %v, want not implemented", err)
	}
}

func TestExecTerminal(t *testing.T) {
	ociruntimetest.RequireRuntime(t)
	r := ociruntimetest.NewRuntime(t)
	r.ExecShim = shimArgv(t)
	id := runningContainer(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("output and exit code", func(t *testing.T) {
		p := process("sh", "-c", "tty; echo hi; exit 4")
		p.Terminal = true
		var out testutil.SyncBuffer
		code, err := r.Exec(ctx, id, p, ociruntime.ExecIO{Stdout: &out})
		if err != nil {
			t.Fatal(err)
		}
		if code != 4 || !strings.Contains(out.String(), "/dev/pts/") || !strings.Contains(out.String(), "hi\r\n") {
			t.Errorf("exec = code %d output %q, want 4 and a pts name and hi", code, out.String())
		}
	})

	t.Run("stdin and resize", func(t *testing.T) {
		p := process("sh", "-c", "read x; echo got-$x; stty size")
		p.Terminal = true
		resize := make(chan ociruntime.WinSize)
		gate := make(chan struct{})
		var out testutil.SyncBuffer
		done := make(chan error, 1)
		var code int
		go func() {
			var err error
			code, err = r.Exec(ctx, id, p, ociruntime.ExecIO{
				Stdin: &gatedReader{gate: gate, r: strings.NewReader("word\n")}, Stdout: &out, Resize: resize,
			})
			done <- err
		}()
		// The loop applies sizes in order: once the second is taken,
		// the first is applied.
		for range 2 {
			select {
			case resize <- ociruntime.WinSize{Width: 91, Height: 33}:
			case err := <-done:
				t.Fatalf("exec ended before taking the resize: code %d, %v, output %q", code, err, out.String())
			}
		}
		close(gate)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if code != 0 || !strings.Contains(out.String(), "got-word\r\n") || !strings.Contains(out.String(), "33 91\r\n") {
			t.Errorf("exec = code %d output %q, want 0, got-word and 33 91", code, out.String())
		}
	})

	t.Run("cancel kills", func(t *testing.T) {
		p := process("sleep", "63")
		p.Terminal = true
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		defer ccancel()
		if _, err := r.Exec(cctx, id, p, ociruntime.ExecIO{}); err == nil {
			t.Fatal("exec of sleep 63 outlived its context without an error")
		}
		var ps testutil.SyncBuffer
		if _, err := r.Exec(ctx, id, process("ps"), ociruntime.ExecIO{Stdout: &ps}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(ps.String(), "sleep 63") {
			t.Fatalf("cancelled terminal exec still runs:\n%s", ps.String())
		}
	})
}
