package streaming

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/sandbox"
)

// echoServer accepts connections on loopback and echoes each one back,
// prefixed, until the client half-closes.
func echoServer(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				_, _ = c.Write(append([]byte("echo:"), b...))
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// fakeStream is a port-forward stream whose client sends in and then
// finishes sending; what the pod answers collects in out.
type fakeStream struct {
	in  io.Reader
	out bytes.Buffer
}

func (s *fakeStream) Read(p []byte) (int, error)  { return s.in.Read(p) }
func (s *fakeStream) Write(p []byte) (int, error) { return s.out.Write(p) }
func (s *fakeStream) Close() error                { return nil }

func TestPortForwardHostNetwork(t *testing.T) {
	port := echoServer(t)
	rt := NewRuntime(nil, fakeSandboxes{"pod": {ID: "pod", State: sandbox.Ready}})
	for _, msg := range []string{"ping", "", strings.Repeat("x", 1<<20)} {
		stream := &fakeStream{in: strings.NewReader(msg)}
		done := make(chan error, 1)
		go func() { done <- rt.PortForward(context.Background(), "pod", int32(port), stream) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("PortForward = %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("PortForward did not return after the pod closed")
		}
		// The answer came after the input ended: the pod saw a half-close.
		if got := stream.out.String(); got != "echo:"+msg {
			t.Errorf("forwarded answer of %d bytes, want echo: and the %d bytes sent", len(got), len(msg))
		}
	}
}

func TestPortForwardRefusals(t *testing.T) {
	sbs := fakeSandboxes{
		"ready":    {ID: "ready", State: sandbox.Ready},
		"notready": {ID: "notready", State: sandbox.NotReady},
	}
	closed := closedPort(t)
	tests := []struct {
		name string
		pod  string
		port int32
		is   func(error) bool
	}{
		{"port zero", "ready", 0, errdefs.IsInvalidArgument},
		{"port too big", "ready", 70000, errdefs.IsInvalidArgument},
		{"not ready", "notready", 80, errdefs.IsFailedPrecondition},
		{"unknown pod", "gone", 80, func(err error) bool { return err != nil }},
		{"nothing listens", "ready", int32(closed), func(err error) bool { return err != nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, server := net.Pipe()
			defer server.Close()
			err := NewRuntime(nil, sbs).PortForward(context.Background(), tt.pod, tt.port, server)
			if !tt.is(err) {
				t.Errorf("PortForward = %v, not of the expected class", err)
			}
		})
	}
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}
