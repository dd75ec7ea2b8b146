package nshold

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary is its own holder: Start runs `BIN hold SOCKET`.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "hold" {
		os.Exit(Main(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// holderPid is the pid in a path /proc/PID/fd/N the holder gave.
func holderPid(t *testing.T, path string) int {
	t.Helper()
	f := strings.Split(path, "/")
	if len(f) != 5 || f[1] != "proc" {
		t.Fatalf("path %q is not /proc/PID/fd/N", path)
	}
	pid, err := strconv.Atoi(f[2])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// killHolder kills pid and waits until it is gone (it is not this
// process's child once Start returned: its Wait may reap it).
func killHolder(t *testing.T, pid int) {
	t.Helper()
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(st), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("holder %d outlived SIGKILL", pid)
		}
	}
}

// A Lazy starts a holder at the first put, tells Lost when that holder is
// killed, starts a new one for the next put, and after Close tells
// nothing.
func TestLazyReportsAKilledHolderAndReplacesIt(t *testing.T) {
	dir := t.TempDir()
	l := &Lazy{Bin: os.Args[0], Socket: filepath.Join(dir, "hold.sock"), LogPath: filepath.Join(dir, "hold.log")}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()

	if held, err := l.List(); err != nil || len(held) != 0 {
		t.Fatalf("List with no holder = %v, %v; want nothing", held, err)
	}
	path, err := l.Put(filepath.Join(dir, "a"), int(devnull.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	first := holderPid(t, path)
	t.Cleanup(func() { _ = syscall.Kill(first, syscall.SIGKILL) })
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the held descriptor does not open: %v", err)
	}
	select {
	case <-l.Lost():
		t.Fatal("Lost received while the holder runs")
	default:
	}

	killHolder(t, first)
	select {
	case <-l.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("Lost received nothing after the holder was killed")
	}

	path, err = l.Put(filepath.Join(dir, "b"), int(devnull.Fd()))
	if err != nil {
		t.Fatalf("Put after the holder was killed: %v", err)
	}
	second := holderPid(t, path)
	t.Cleanup(func() { _ = syscall.Kill(second, syscall.SIGKILL) })
	if second == first {
		t.Fatalf("the second put went to the killed holder %d", first)
	}
	held, err := l.List()
	if err != nil || len(held) != 1 || held[filepath.Join(dir, "b")] != path {
		t.Fatalf("List = %v, %v; want only b at %s", held, err, path)
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	killHolder(t, second)
	// The watch of a closed Lazy ended with Close; give a late one time
	// to speak before concluding it did not.
	time.Sleep(100 * time.Millisecond)
	select {
	case <-l.Lost():
		t.Fatal("Lost received after Close")
	default:
	}
}

// CheckPaths refuses a socket path a unix socket cannot bind and keys the
// holder would refuse, and takes crib's default state directory.
func TestCheckPaths(t *testing.T) {
	long := "/" + strings.Repeat("d", 120)
	for _, c := range []struct {
		socket, key string
		ok          bool
	}{
		{"/run/crib/nshold.sock", "/run/crib/sandboxes/" + strings.Repeat("f", 64) + "/ns/user", true},
		{long + "/nshold.sock", "/run/crib/sandboxes/x/ns/user", false},
		{"/run/crib/nshold.sock", long + long + long + "/ns/user", false},
		{"/run/cr ib/nshold.sock", "/run/cr ib/sandboxes/x/ns/user", false},
	} {
		if err := CheckPaths(c.socket, c.key); (err == nil) != c.ok {
			t.Errorf("CheckPaths(%q, %q) = %v, want ok=%v", c.socket, c.key, err, c.ok)
		}
	}
}
