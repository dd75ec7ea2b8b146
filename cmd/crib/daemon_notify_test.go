package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNotifier: the socket's name is taken out of the environment (the
// processes crib starts must not see it) and states arrive as datagrams.
func TestNotifier(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", path)
	n := takeNotifySocket()
	if v, ok := os.LookupEnv("NOTIFY_SOCKET"); ok {
		t.Fatalf("NOTIFY_SOCKET is still %q", v)
	}
	for _, state := range []string{"READY=1", reloadingState(), "STOPPING=1"} {
		if err := n.send(state); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 256)
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		k, err := conn.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(buf[:k]); got != state {
			t.Errorf("received %q, want %q", got, state)
		}
	}
	if s := reloadingState(); !strings.HasPrefix(s, "RELOADING=1\nMONOTONIC_USEC=") || strings.HasSuffix(s, "=0") {
		t.Errorf("reloading state %q", s)
	}
	if err := (notifier{}).send("READY=1"); err != nil {
		t.Errorf("without a socket, send = %v", err)
	}
}
