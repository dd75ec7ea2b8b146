package integration

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crib-dev/crib/internal/testutil"
)

// TestSystemdNotify: under a NOTIFY_SOCKET, crib daemon sends READY=1 once
// it serves, RELOADING=1 then READY=1 around a SIGHUP's reload, STOPPING=1
// when it stops; and the processes it starts do not inherit the socket.
func TestSystemdNotify(t *testing.T) {
	testutil.RequiresRoot(t)
	t.Parallel()
	dir, err := os.MkdirTemp("/tmp", "crib-notify-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	next := func(want string) {
		t.Helper()
		buf := make([]byte, 4096)
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("waiting for %q: %v", want, err)
		}
		if got := string(buf[:n]); !strings.HasPrefix(got, want) {
			t.Fatalf("received %q, want %q", got, want)
		}
	}

	d := testutil.StartDaemon(t, testutil.Options{Env: []string{"NOTIFY_SOCKET=" + path}})
	// StartDaemon returned once the socket answered: READY=1 was sent
	// before, and not twice.
	next("READY=1")

	// The idle monitor crib keeps is its child: its environment must not
	// name the socket.
	var children []int
	eventually(t, 10*time.Second, "a child process of crib", func() bool {
		children = childrenOf(d.Pid())
		return len(children) > 0
	})
	for _, pid := range children {
		env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err != nil {
			continue // gone meanwhile
		}
		if bytes.Contains(env, []byte("NOTIFY_SOCKET=")) {
			t.Errorf("crib's child %d inherited NOTIFY_SOCKET", pid)
		}
	}

	if err := syscall.Kill(d.Pid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	next("RELOADING=1\nMONOTONIC_USEC=")
	next("READY=1")
	d.Stop(t)
	next("STOPPING=1")
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if ppid, ok := strings.CutPrefix(line, "PPid:"); ok && strings.TrimSpace(ppid) == strconv.Itoa(pid) {
				out = append(out, child)
			}
		}
	}
	return out
}
