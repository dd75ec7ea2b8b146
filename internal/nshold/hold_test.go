package nshold

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// serve runs a holder on a socket of its own and returns the socket and a
// channel that gets Serve's result.
func serve(t *testing.T) (string, <-chan error) {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "hold.sock")
	ln, err := Listen(socket)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- NewHolder(slog.New(slog.NewTextHandler(io.Discard, nil))).Serve(ln) }()
	return socket, done
}

func dial(t *testing.T, socket string) *Client {
	t.Helper()
	c, err := Dial(socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestPutListDrop(t *testing.T) {
	socket, _ := serve(t)
	c := dial(t, socket)
	if c.Pid() != os.Getpid() {
		t.Errorf("Pid() = %d, want this process's %d (the holder runs in it)", c.Pid(), os.Getpid())
	}

	// What the holder keeps is the object handed over: a pipe's write end,
	// written through the holder's path after the caller closed its own.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	path, err := c.Put("sb1/ipc", int(w.Fd()))
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	w.Close()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	if _, err := f.WriteString("held\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	buf := make([]byte, 5)
	if _, err := io.ReadFull(r, buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("read through the holder's descriptor: %q, %v", buf, err)
	}

	other, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, k := range []string{"sb1/uts", "sb2/ipc"} {
		if _, err := c.Put(k, int(other.Fd())); err != nil {
			t.Fatalf("Put %s: %v", k, err)
		}
	}
	got, err := c.List()
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(got) != 3 || got["sb1/ipc"] != path {
		t.Fatalf("List = %v, want 3 keys with sb1/ipc at %s", got, path)
	}

	n, err := c.Drop("sb1/")
	if err != nil || n != 2 {
		t.Fatalf("Drop(sb1/) = %d, %v; want 2", n, err)
	}
	// The write end is gone from the holder: the pipe reads end of file.
	if _, err := r.Read(buf); err != io.EOF {
		t.Errorf("read after drop: %v, want EOF (the holder closed the last write end)", err)
	}
	got, err = c.List()
	if err != nil || len(got) != 1 || got["sb2/ipc"] == "" {
		t.Errorf("List after drop = %v, %v; want sb2/ipc alone", got, err)
	}
}

func TestBadRequests(t *testing.T) {
	socket, _ := serve(t)
	c := dial(t, socket)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	for _, key := range []string{"", "a b", strings.Repeat("k", maxKey+1)} {
		if _, err := c.Put(key, int(devnull.Fd())); err == nil {
			t.Errorf("Put(%q) succeeded", key)
		}
	}
	// What the client would refuse, the holder refuses too.
	for req, want := range map[string]string{
		"put x":     "put takes one descriptor",
		"put a\tb":  "space or a control character",
		"drop":      "drop needs a prefix",
		"hello":     "unknown request",
		"put " + "": "empty key",
	} {
		if _, err := c.conn.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		_, err := c.read()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", req, err, want)
		}
	}
	if got, err := c.List(); err != nil || len(got) != 0 {
		t.Errorf("List = %v, %v; want nothing held", got, err)
	}
}

// The holder outlives its clients while it holds something, and ends once
// a drop took the last thing it held, its client still connected.
func TestHolderEndsWhenEmptied(t *testing.T) {
	socket, done := serve(t)
	c, err := Dial(socket)
	if err != nil {
		t.Fatal(err)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	if _, err := c.Put("sb/net", int(devnull.Fd())); err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case err := <-done:
		t.Fatalf("the holder ended while holding a descriptor: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	c, err = Dial(socket)
	if err != nil {
		t.Fatalf("dial again: %v", err)
	}
	defer c.Close()
	if n, err := c.Drop("sb/"); err != nil || n != 1 {
		t.Fatalf("Drop = %d, %v", n, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the holder did not end once emptied")
	}
	if _, err := Listen(socket); err != nil {
		t.Errorf("a new holder cannot take the socket of one that ended: %v", err)
	}
}

func TestListenRefusesASocketInUse(t *testing.T) {
	socket, _ := serve(t)
	dial(t, socket) // a client keeps the empty holder serving
	if _, err := Listen(socket); err == nil || !strings.Contains(err.Error(), "serves it already") {
		t.Fatalf("Listen on a served socket: %v", err)
	}
	st, err := os.Stat(socket)
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		t.Errorf("socket mode %v, want root's alone", perm)
	}
}

// A UTS namespace whose maker is gone lives on in the holder, and a thread
// joins it through the holder's path, as a runtime does.
func TestJoinThroughHolder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	socket, _ := serve(t)
	c := dial(t, socket)
	type result struct {
		path string
		err  error
	}
	made := make(chan result, 1)
	go func() {
		// The thread ends in the new namespace and is not unlocked, so
		// the runtime discards it: only the holder keeps the namespace.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWUTS); err != nil {
			made <- result{err: err}
			return
		}
		if err := unix.Sethostname([]byte("held-uts")); err != nil {
			made <- result{err: err}
			return
		}
		f, err := os.Open("/proc/thread-self/ns/uts")
		if err != nil {
			made <- result{err: err}
			return
		}
		defer f.Close()
		path, err := c.Put("sb/uts", int(f.Fd()))
		made <- result{path, err}
	}()
	r := <-made
	if r.err != nil {
		t.Fatal(r.err)
	}
	joined := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(r.path)
		if err != nil {
			joined <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWUTS); err != nil {
			joined <- result{err: err}
			return
		}
		var u unix.Utsname
		err = unix.Uname(&u)
		joined <- result{path: unix.ByteSliceToString(u.Nodename[:]), err: err}
	}()
	j := <-joined
	if j.err != nil || j.path != "held-uts" {
		t.Fatalf("joined through %s: hostname %q, %v; want held-uts", r.path, j.path, j.err)
	}
	if _, err := c.Drop("sb/"); err != nil {
		t.Fatal(err)
	}
}

// A holder that emptied takes nothing more: a put then ends the
// connection, unanswered, and the descriptor is not kept.
func TestEmptiedHolderTakesNothing(t *testing.T) {
	socket, done := serve(t)
	c := dial(t, socket)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	if _, err := c.Put("sb/ipc", int(devnull.Fd())); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Drop("sb/"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put("sb2/ipc", int(devnull.Fd())); err == nil {
		t.Fatal("a put to an emptied holder succeeded")
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the emptied holder did not end")
	}
}
