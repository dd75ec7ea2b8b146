package streaming

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	criremote "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/ociruntime"
	"github.com/crib-dev/crib/internal/sandbox"
)

// fakeContainers records the calls and answers with code and err.
type fakeContainers struct {
	code int
	err  error

	id      string
	cmd     []string
	tty     bool
	streams container.Streams
	// sizes are the resizes read from the streams before returning.
	sizes []ociruntime.WinSize
	// readSizes is how many resizes to wait for.
	readSizes int
}

func (f *fakeContainers) Exec(ctx context.Context, id string, cmd []string, tty bool, s container.Streams) (int, error) {
	f.id, f.cmd, f.tty, f.streams = id, cmd, tty, s
	f.takeSizes()
	return f.code, f.err
}

func (f *fakeContainers) Attach(ctx context.Context, id string, s container.Streams) error {
	f.id, f.streams = id, s
	f.takeSizes()
	return f.err
}

func (f *fakeContainers) takeSizes() {
	for range f.readSizes {
		f.sizes = append(f.sizes, <-f.streams.Resize)
	}
}

// nopWriteCloser is a WriteCloser that discards.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func TestExecExitCode(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name     string
		code     int
		err      error
		wantCode int // -1: no ExitError
		wantErr  error
	}{
		{"success", 0, nil, -1, nil},
		{"exit 3", 3, nil, 3, nil},
		{"killed", 137, nil, 137, nil},
		{"failure", -1, boom, -1, boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeContainers{code: tt.code, err: tt.err}
			rt := NewRuntime(f, nil)
			err := rt.Exec(context.Background(), "c1", []string{"sh"}, nil, nopWriteCloser{io.Discard}, nil, false, nil)
			var exitErr utilexec.ExitError
			switch {
			case tt.wantCode >= 0:
				if !errors.As(err, &exitErr) || !exitErr.Exited() || exitErr.ExitStatus() != tt.wantCode {
					t.Fatalf("Exec = %v, want an ExitError with status %d", err, tt.wantCode)
				}
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) || errors.As(err, &exitErr) {
					t.Fatalf("Exec = %v, want %v and no ExitError", err, tt.wantErr)
				}
			case err != nil:
				t.Fatalf("Exec = %v, want nil", err)
			}
			if d := cmp.Diff([]any{"c1", []string{"sh"}, false}, []any{f.id, f.cmd, f.tty}); d != "" {
				t.Errorf("call (-want +got):\n%s", d)
			}
		})
	}
}

func TestExecStreams(t *testing.T) {
	in := strings.NewReader("x")
	out, errOut := nopWriteCloser{io.Discard}, nopWriteCloser{io.Discard}
	tests := []struct {
		name                   string
		in                     io.Reader
		out, errOut            io.WriteCloser
		tty                    bool
		wantIn, wantOut, wantE bool
	}{
		{"all", in, out, errOut, false, true, true, true},
		{"none", nil, nil, nil, false, false, false, false},
		{"tty drops stderr", in, out, errOut, true, true, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeContainers{}
			if err := NewRuntime(f, nil).Exec(context.Background(), "c", []string{"true"}, tt.in, tt.out, tt.errOut, tt.tty, nil); err != nil {
				t.Fatal(err)
			}
			got := []bool{f.streams.Stdin != nil, f.streams.Stdout != nil, f.streams.Stderr != nil}
			if d := cmp.Diff([]bool{tt.wantIn, tt.wantOut, tt.wantE}, got); d != "" {
				t.Errorf("streams stdin/stdout/stderr set (-want +got):\n%s", d)
			}
		})
	}
}

func TestResizeRelayed(t *testing.T) {
	sizes := []criremote.TerminalSize{{Width: 80, Height: 24}, {Width: 120, Height: 40}}
	for _, attach := range []bool{false, true} {
		f := &fakeContainers{readSizes: len(sizes)}
		resize := make(chan criremote.TerminalSize, len(sizes))
		for _, s := range sizes {
			resize <- s
		}
		rt := NewRuntime(f, nil)
		out := nopWriteCloser{io.Discard}
		var err error
		if attach {
			err = rt.Attach(context.Background(), "c", nil, out, nil, true, resize)
		} else {
			err = rt.Exec(context.Background(), "c", []string{"sh"}, nil, out, nil, true, resize)
		}
		if err != nil {
			t.Fatal(err)
		}
		want := []ociruntime.WinSize{{Width: 80, Height: 24}, {Width: 120, Height: 40}}
		if d := cmp.Diff(want, f.sizes); d != "" {
			t.Errorf("attach=%v: sizes (-want +got):\n%s", attach, d)
		}
	}
}

func TestResizesEndWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out := resizes(ctx, make(chan criremote.TerminalSize))
	cancel()
	select {
	case _, ok := <-out:
		if ok {
			t.Fatal("a size came from nowhere")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the relay outlived its context")
	}
	if resizes(context.Background(), nil) != nil {
		t.Error("no resize channel gave a relay")
	}
}

func TestAttachWithoutTerminalHasNoResize(t *testing.T) {
	f := &fakeContainers{}
	in := strings.NewReader("x")
	if err := NewRuntime(f, nil).Attach(context.Background(), "c", in, nopWriteCloser{io.Discard}, nopWriteCloser{io.Discard}, false, make(chan criremote.TerminalSize)); err != nil {
		t.Fatal(err)
	}
	if f.streams.Resize != nil || f.streams.Stdin == nil || f.streams.Stderr == nil {
		t.Errorf("streams %+v, want stdin and stderr and no resize", f.streams)
	}
}

// fakeSandboxes holds sandboxes by id.
type fakeSandboxes map[string]sandbox.Sandbox

func (f fakeSandboxes) Get(id string) (sandbox.Sandbox, error) {
	sb, ok := f[id]
	if !ok {
		return sb, errors.New("no such sandbox")
	}
	return sb, nil
}
