package monitor_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/crib-dev/crib/internal/monitor"
	"github.com/crib-dev/crib/internal/ociruntime"
	"github.com/crib-dev/crib/internal/testutil"
)

func attachClient(t *testing.T, e *env) *monitor.Client {
	t.Helper()
	c, err := monitor.Dial(context.Background(), e.cfg.Socket)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAttachStdinOnce(t *testing.T) {
	e := newEnv(t, []string{"sh", "-c", "read x; echo out-$x; echo err-$x >&2; exec cat"}, nil)
	e.cfg.Stdin, e.cfg.StdinOnce = true, true
	e.run(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr testutil.SyncBuffer
	// cat ends only when the end of this input closes the container's
	// stdin (stdin_once); then the container exits and Attach returns.
	err := attachClient(t, e).Attach(ctx, monitor.AttachIO{
		Stdin: strings.NewReader("a\nrest\n"), Stdout: &stdout, Stderr: &stderr,
	})
	if err != nil {
		t.Fatalf("Attach = %v", err)
	}
	if got := []string{stdout.String(), stderr.String()}; got[0] != "out-a\nrest\n" || got[1] != "err-a\n" {
		t.Errorf("attach output = %q, want stdout \"out-a\\nrest\\n\" and stderr \"err-a\\n\"", got)
	}
	if ex := e.wait(t); ex.ExitCode != 0 {
		t.Errorf("exit code %d, want 0", ex.ExitCode)
	}
	if recs := readLog(t, e.cfg.LogPath); len(byStream(recs, "stdout")) != 2 || len(byStream(recs, "stderr")) != 1 {
		t.Errorf("log records %+v, want 2 stdout and 1 stderr", recs)
	}
	// The output has ended: a new session is refused, by the monitor or,
	// once it is gone, by its socket.
	if c, err := monitor.Dial(ctx, e.cfg.Socket); err == nil {
		if err := c.Attach(ctx, monitor.AttachIO{}); err == nil {
			t.Error("Attach after the exit succeeded")
		}
	}
}

func TestAttachKeepsStdinWithoutStdinOnce(t *testing.T) {
	e := newEnv(t, []string{"cat"}, nil)
	e.cfg.Stdin = true
	e.run(t)
	client := attachClient(t, e)
	for _, word := range []string{"one", "two"} {
		ctx, cancel := context.WithCancel(context.Background())
		var out testutil.SyncBuffer
		done := make(chan error, 1)
		go func() {
			done <- client.Attach(ctx, monitor.AttachIO{Stdin: strings.NewReader(word + "\n"), Stdout: &out})
		}()
		eventually(t, "echo of "+word, func() bool { return out.String() == word+"\n" })
		cancel()
		if err := <-done; err == nil {
			t.Errorf("Attach ended by its context = nil, want the context's error")
		}
	}
	if err := e.rt.Kill(context.Background(), e.cfg.ID, 9, false); err != nil {
		t.Fatal(err)
	}
	e.wait(t)
}

func TestAttachTerminal(t *testing.T) {
	e := newEnv(t, []string{"sh"}, func(s *specs.Spec) { s.Process.Terminal = true })
	e.cfg.Stdin, e.cfg.Terminal = true, true
	e.run(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inR, inW := io.Pipe()
	defer inW.Close()
	resize := make(chan ociruntime.WinSize)
	var out testutil.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- attachClient(t, e).Attach(ctx, monitor.AttachIO{Stdin: inR, Stdout: &out, Resize: resize})
	}()
	// Frames go out in order: once the second size is taken, the first
	// was sent, ahead of the input written next.
	resize <- ociruntime.WinSize{Width: 91, Height: 33}
	resize <- ociruntime.WinSize{Width: 91, Height: 33}
	if _, err := io.WriteString(inW, "echo hi-$((1+1))\n"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "hi-2 from the shell", func() bool { return strings.Contains(out.String(), "hi-2\r\n") })
	if _, err := io.WriteString(inW, "stty size; exit 5\n"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Attach = %v", err)
	}
	if !strings.Contains(out.String(), "33 91\r\n") {
		t.Errorf("terminal output %q lacks the size 33 91", out.String())
	}
	if ex := e.wait(t); ex.ExitCode != 5 {
		t.Errorf("exit code %d, want 5", ex.ExitCode)
	}
	recs := readLog(t, e.cfg.LogPath)
	if len(byStream(recs, "stderr")) != 0 || !strings.Contains(recordsText(recs), "hi-2") {
		t.Errorf("terminal log %+v, want stdout records with hi-2 and no stderr", recs)
	}
}

func recordsText(recs []record) string {
	var b strings.Builder
	for _, r := range recs {
		b.WriteString(r.Content + "\n")
	}
	return b.String()
}
