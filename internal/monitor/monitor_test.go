package monitor_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/crib-dev/crib/internal/monitor"
	"github.com/crib-dev/crib/internal/ociruntime"
)

// record is one parsed CRI log line.
type record struct {
	Stream, Tag, Content string
}

// readLog parses a CRI log file strictly.
func readLog(t *testing.T, path string) []record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), " ", 4)
		if len(parts) != 4 {
			t.Fatalf("malformed log line %q", sc.Text())
		}
		ts, err := time.Parse(time.RFC3339Nano, parts[0])
		if err != nil || ts.Location() != time.UTC || !strings.HasSuffix(parts[0], "Z") {
			t.Fatalf("bad timestamp %q: %v", parts[0], err)
		}
		if parts[1] != "stdout" && parts[1] != "stderr" {
			t.Fatalf("bad stream in %q", sc.Text())
		}
		if parts[2] != "F" && parts[2] != "P" {
			t.Fatalf("bad tag in %q", sc.Text())
		}
		recs = append(recs, record{parts[1], parts[2], parts[3]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return recs
}

func byStream(recs []record, stream string) []record {
	var out []record
	for _, r := range recs {
		if r.Stream == stream {
			out = append(out, r)
		}
	}
	return out
}

func TestLogAndExitCode(t *testing.T) {
	long := strings.Repeat("a", 20000)
	script := `echo one; echo two >&2; head -c 20000 /dev/zero | tr '\0' a; echo; ` +
		`printf 'crlf\r\n'; echo three >&2; printf tail-no-newline; exit 3`
	e := newEnv(t, []string{"sh", "-c", script}, nil)
	h := e.run(t)
	if h.ContainerPid <= 0 || h.MonitorPid <= 0 {
		t.Fatalf("bad handle %+v", h)
	}
	before := time.Now()
	// The container exits at once: its monitor may be gone before we ask,
	// and WaitExit then reads the exit file.
	ex := e.wait(t)
	if ex.ExitCode != 3 || ex.OOMKilled || ex.ExitedAt.IsZero() || ex.ExitedAt.After(before.Add(time.Minute)) {
		t.Errorf("exit %+v, want code 3, not OOM killed, with a time", ex)
	}
	fromFile, ok, err := monitor.ReadExit(e.cfg.ExitFile)
	if err != nil || !ok {
		t.Fatalf("read exit file: %v, %v", ok, err)
	}
	if d := cmp.Diff(ex, fromFile); d != "" {
		t.Errorf("exit file differs from WaitExit (-wait +file):\n%s", d)
	}

	recs := readLog(t, e.cfg.LogPath)
	wantOut := []record{
		{"stdout", "F", "one"},
		{"stdout", "P", long[:16384]},
		{"stdout", "F", long[16384:]},
		{"stdout", "F", "crlf"},
		{"stdout", "P", "tail-no-newline"}, // as containerd writes it
	}
	wantErr := []record{{"stderr", "F", "two"}, {"stderr", "F", "three"}}
	if d := cmp.Diff(wantOut, byStream(recs, "stdout")); d != "" {
		t.Errorf("stdout records (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantErr, byStream(recs, "stderr")); d != "" {
		t.Errorf("stderr records (-want +got):\n%s", d)
	}
	// The monitor quits after the exit and removes its socket.
	waitGone(t, h.MonitorPid)
	if _, err := os.Stat(e.cfg.Socket); !os.IsNotExist(err) {
		t.Errorf("socket still there: %v", err)
	}
	if _, err := monitor.Dial(context.Background(), e.cfg.Socket); !errdefs.IsUnavailable(err) {
		t.Errorf("dial after exit: got %v, want unavailable", err)
	}
	got, err := monitor.WaitExit(context.Background(), e.cfg.Socket, e.cfg.ExitFile)
	if err != nil || got.ExitCode != 3 {
		t.Errorf("WaitExit after monitor exit: %+v, %v", got, err)
	}
}

func TestRunMode(t *testing.T) {
	e := newEnv(t, []string{"sh", "-c", "echo started; read x; exit 7"}, nil)
	e.cfg.Run = true
	e.cfg.Stdin = true
	h := e.start(t)
	st, err := e.rt.State(context.Background(), e.cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != "running" || st.Pid != h.ContainerPid {
		t.Fatalf("state after Start in run mode = %+v, want running with pid %d", st, h.ContainerPid)
	}
	// The monitor holds stdin open, so the container waits on read until
	// it is killed.
	if err := e.rt.Kill(context.Background(), e.cfg.ID, syscall.SIGKILL, false); err != nil {
		t.Fatal(err)
	}
	if ex := e.wait(t); ex.ExitCode != 137 {
		t.Errorf("exit code %d, want 137", ex.ExitCode)
	}
	if recs := readLog(t, e.cfg.LogPath); len(recs) != 1 || recs[0].Content != "started" {
		t.Errorf("log records %v, want the one line", recs)
	}
}

func TestKilledContainerExitCode(t *testing.T) {
	tests := []struct {
		name  string
		start bool
	}{
		{"running", true},
		// runc delete kills `runc init` of a container never started.
		{"deleted before start", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, []string{"sleep", "3600"}, nil)
			ctx := context.Background()
			if tc.start {
				e.run(t)
				if err := e.rt.Kill(ctx, e.cfg.ID, syscall.SIGKILL, false); err != nil {
					t.Fatal(err)
				}
			} else {
				e.start(t)
				if err := e.rt.Delete(ctx, e.cfg.ID, true); err != nil {
					t.Fatal(err)
				}
			}
			if ex := e.wait(t); ex.ExitCode != 137 {
				t.Errorf("exit code %d, want 137", ex.ExitCode)
			}
		})
	}
}

func TestReopenLog(t *testing.T) {
	e := newEnv(t, []string{"sh", "-c", "i=0; while true; do echo line$i; i=$((i+1)); sleep 0.02; done"}, nil)
	e.run(t)
	ctx := context.Background()
	c, err := monitor.Dial(ctx, e.cfg.Socket)
	if err != nil {
		t.Fatal(err)
	}
	size := func(p string) int64 {
		st, err := os.Stat(p)
		if err != nil {
			return 0
		}
		return st.Size()
	}
	eventually(t, "first log lines", func() bool { return size(e.cfg.LogPath) > 0 })
	rotated := e.cfg.LogPath + ".1"
	if err := os.Rename(e.cfg.LogPath, rotated); err != nil {
		t.Fatal(err)
	}
	if err := c.ReopenLog(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "lines in the new log file", func() bool { return size(e.cfg.LogPath) > 0 })
	oldSize := size(rotated)
	eventually(t, "more lines in the new log file", func() bool { return len(readLog(t, e.cfg.LogPath)) >= 3 })
	if got := size(rotated); got != oldSize {
		t.Errorf("rotated file grew after reopen: %d -> %d", oldSize, got)
	}
	for _, r := range append(readLog(t, rotated), readLog(t, e.cfg.LogPath)...) {
		if r.Stream != "stdout" || r.Tag != "F" || !strings.HasPrefix(r.Content, "line") {
			t.Errorf("unexpected record %+v", r)
		}
	}
	if err := e.rt.Kill(ctx, e.cfg.ID, syscall.SIGKILL, true); err != nil {
		t.Fatal(err)
	}
	e.wait(t)
}

func TestMonitorSurvivesDaemonKill(t *testing.T) {
	e := newEnv(t, []string{"sh", "-c", "i=0; while true; do echo line$i; i=$((i+1)); sleep 0.02; done"}, nil)
	cfgJSON, err := json.Marshal(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(e.cfg.Binary, "start-helper", string(cfgJSON))
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	helper.Stderr = os.Stderr
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })
	var h monitor.Handle
	if err := json.NewDecoder(out).Decode(&h); err != nil {
		t.Fatalf("read handle from helper: %v", err)
	}
	e.cleanupMonitor(t, h.MonitorPid)
	ctx := context.Background()
	if err := e.rt.Start(ctx, e.cfg.ID); err != nil {
		t.Fatal(err)
	}
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	if !alive(h.MonitorPid) {
		t.Fatal("monitor died with its parent")
	}
	n := len(readLog(t, e.cfg.LogPath))
	eventually(t, "the log to keep growing", func() bool { return len(readLog(t, e.cfg.LogPath)) > n+3 })
	if s, err := e.rt.State(ctx, e.cfg.ID); err != nil || s.Status != ociruntime.StatusRunning {
		t.Fatalf("container state %+v, %v", s, err)
	}
	if err := e.rt.Kill(ctx, e.cfg.ID, syscall.SIGKILL, true); err != nil {
		t.Fatal(err)
	}
	got, err := monitor.WaitExit(ctx, e.cfg.Socket, e.cfg.ExitFile)
	if err != nil || got.ExitCode != 137 {
		t.Fatalf("wait: %+v, %v", got, err)
	}
}

func TestCreateFailure(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		edit     func(*monitor.StartConfig)
		wantText string
	}{
		{"missing binary in spec", []string{"/nonexistent-binary"}, nil, "nonexistent-binary"},
		{"missing runtime", []string{"true"}, func(c *monitor.StartConfig) { c.RuntimeBinary = "/no/such/runc" }, "/no/such/runc"},
		{"missing log directory", []string{"true"}, func(c *monitor.StartConfig) { c.LogPath = "/no/such/dir/0.log" }, "open log file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.args, nil)
			if tc.edit != nil {
				tc.edit(&e.cfg)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := monitor.Start(ctx, e.cfg)
			if err == nil {
				t.Fatal("start succeeded")
			}
			t.Logf("start error: %v", err)
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error %q does not mention %q", err, tc.wantText)
			}
			if pids := processesMentioning(e.cfg.ID); len(pids) != 0 {
				t.Errorf("processes left behind: %v", pids)
			}
			if _, err := os.Stat(e.cfg.Socket); !os.IsNotExist(err) {
				t.Errorf("socket left behind: %v", err)
			}
			if _, err := e.rt.State(ctx, e.cfg.ID); !errdefs.IsNotFound(err) {
				t.Errorf("runtime still knows the container: %v", err)
			}
		})
	}
}

// The container must not inherit ignored signals from its monitor.
func TestContainerSignalDispositions(t *testing.T) {
	e := newEnv(t, []string{"cat", "/proc/self/status"}, nil)
	e.run(t)
	e.wait(t)
	var sigIgn string
	for _, r := range readLog(t, e.cfg.LogPath) {
		if v, ok := strings.CutPrefix(r.Content, "SigIgn:"); ok {
			sigIgn = strings.TrimSpace(v)
		}
	}
	if sigIgn != "0000000000000000" {
		t.Errorf("container ignores signals: SigIgn %q", sigIgn)
	}
}

func TestDuplicates(t *testing.T) {
	e := newEnv(t, []string{"sleep", "3600"}, nil)
	e.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	same := e.cfg
	if _, err := monitor.Start(ctx, same); !errdefs.IsAlreadyExists(err) {
		t.Errorf("second monitor on a live socket: got %v, want already exists", err)
	}
	other := e.cfg
	other.Socket += "2"
	other.ExitFile += "2"
	if _, err := monitor.Start(ctx, other); !errdefs.IsAlreadyExists(err) || !strings.Contains(err.Error(), "exists") {
		t.Errorf("second create of one id: got %v, want already exists", err)
	}
	if s, err := e.rt.State(ctx, e.cfg.ID); err != nil || s.Status != ociruntime.StatusCreated {
		t.Errorf("first container disturbed: %+v, %v", s, err)
	}
	if _, err := monitor.Dial(ctx, e.cfg.Socket); err != nil {
		t.Errorf("first monitor disturbed: %v", err)
	}
}

func TestStdin(t *testing.T) {
	tests := []struct {
		stdin bool
		want  string
	}{
		{false, "/dev/null"},
		{true, "pipe:"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint("stdin=", tc.stdin), func(t *testing.T) {
			e := newEnv(t, []string{"sleep", "3600"}, nil)
			e.cfg.Stdin = tc.stdin
			e.run(t)
			var out bytes.Buffer
			p := specs.Process{Args: []string{"readlink", "/proc/1/fd/0"}, Env: []string{"PATH=/bin"}, Cwd: "/"}
			if _, err := e.rt.Exec(context.Background(), e.cfg.ID, p, ociruntime.ExecIO{Stdout: &out}); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(out.String(), tc.want) {
				t.Errorf("container stdin is %q, want %s...", out.String(), tc.want)
			}
		})
	}
}
