package monitor_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"

	"github.com/crib-dev/crib/internal/monitor"
)

// socketEnds counts the kernel's unix sockets bound to path: the listener
// plus one per accepted connection.
func socketEnds(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 8 && fields[7] == path {
			n++
		}
	}
	return n
}

func TestClientWait(t *testing.T) {
	e := newEnv(t, []string{"sleep", "3600"}, nil)
	e.run(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := monitor.Dial(ctx, e.cfg.Socket)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		ex  monitor.Exit
		err error
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			ex, err := c.Wait(ctx)
			results <- result{ex, err}
		}()
	}
	eventually(t, "both waits to connect", func() bool { return socketEnds(t, e.cfg.Socket) >= 3 })
	if err := e.rt.Kill(ctx, e.cfg.ID, syscall.SIGKILL, false); err != nil {
		t.Fatal(err)
	}
	fromFile, ok, err := monitor.ReadExit(e.cfg.ExitFile)
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.ex.ExitCode != 137 {
			t.Errorf("exit %+v, want code 137", r.ex)
		}
		// The exit file exists before any wait is answered.
		if !ok {
			fromFile, ok, err = monitor.ReadExit(e.cfg.ExitFile)
		}
		if err != nil || !ok {
			t.Fatalf("exit file: %v, %v", ok, err)
		}
		if d := cmp.Diff(fromFile, r.ex); d != "" {
			t.Errorf("wait reply differs from exit file (-file +wait):\n%s", d)
		}
	}
}

func TestClientWaitContext(t *testing.T) {
	e := newEnv(t, []string{"sleep", "3600"}, nil)
	e.run(t)
	c, err := monitor.Dial(context.Background(), e.cfg.Socket)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("wait past deadline: got %v, want deadline exceeded", err)
	}
}

func TestNoMonitor(t *testing.T) {
	dir := t.TempDir()
	sock, exitFile := dir+"/none.sock", dir+"/exit.json"
	ctx := context.Background()
	if _, err := monitor.Dial(ctx, sock); !errdefs.IsUnavailable(err) {
		t.Errorf("dial missing socket: got %v, want unavailable", err)
	}
	if _, err := monitor.WaitExit(ctx, sock, exitFile); !errdefs.IsUnavailable(err) {
		t.Errorf("WaitExit without monitor or exit file: got %v, want unavailable", err)
	}
}
