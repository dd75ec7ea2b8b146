package streaming

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// hijackServer is a Server over handler, which hijacks its connection and
// reports when the request's context ends.
func hijackServer(t *testing.T) (*Server, <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{}, 1)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = buf.WriteString("HTTP/1.1 101 Switching Protocols\r\n\r\n")
		_ = buf.Flush()
		// Read as a session does, until the peer goes away.
		go func() { _, _ = io.Copy(io.Discard, conn) }()
		<-r.Context().Done()
		ended <- struct{}{}
	})
	conns := &connSet{m: map[*trackedConn]struct{}{}}
	s := &Server{
		ln:    &trackingListener{Listener: ln, conns: conns},
		conns: conns,
		http:  newHTTPServer(handler),
	}
	go func() { _ = s.Serve() }()
	t.Cleanup(func() { _ = s.Close() })
	return s, ended
}

// upgrade opens a connection to s and waits for its hijacked answer.
func upgrade(t *testing.T, s *Server) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /x HTTP/1.1\r\nHost: test\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, "101") {
		t.Fatalf("upgrade answer %q, %v", line, err)
	}
	return c
}

func waitEnded(t *testing.T, ended <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatalf("the session's context did not end after %s", what)
	}
}

func TestSessionContextEndsWithClient(t *testing.T) {
	s, ended := hijackServer(t)
	c := upgrade(t, s)
	select {
	case <-ended:
		t.Fatal("the session's context ended while the client was there")
	case <-time.After(100 * time.Millisecond):
	}
	c.Close()
	waitEnded(t, ended, "the client closed its connection")
}

func TestCloseEndsSessions(t *testing.T) {
	s, ended := hijackServer(t)
	c := upgrade(t, s)
	defer c.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	waitEnded(t, ended, "Close")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the client's connection is still open after Close")
	}
}

// strandingServer is a Server over a handler that, like the library's
// when the client creates no streams, hijacks the connection, reads it and
// returns without closing it: at once when wait is nil, else once wait is
// closed.
func strandingServer(t *testing.T, wait <-chan struct{}) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		_, _ = buf.WriteString("HTTP/1.1 101 Switching Protocols\r\n\r\n")
		_ = buf.Flush()
		go func() { _, _ = io.Copy(io.Discard, conn) }()
		if wait != nil {
			<-wait
		}
	})
	conns := &connSet{m: map[*trackedConn]struct{}{}}
	s := &Server{ln: &trackingListener{Listener: ln, conns: conns}, conns: conns, http: newHTTPServer(handler)}
	go func() { _ = s.Serve() }()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// serverClosed reports whether c's peer closed its side within 10 s.
func serverClosed(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Read(make([]byte, 1))
	return errors.Is(err, io.EOF)
}

func TestHandlerReturnClosesHijackedConn(t *testing.T) {
	s := strandingServer(t, nil)
	c := upgrade(t, s)
	defer c.Close()
	if !serverClosed(c) {
		t.Error("a hijacked connection its handler left open is still open")
	}
}

func TestClientGoneClosesHijackedConn(t *testing.T) {
	wait := make(chan struct{})
	defer close(wait)
	s := strandingServer(t, wait)
	c := upgrade(t, s)
	defer c.Close()
	// The client's half-close is what the server sees of a client that
	// went away; its read side stays to see the server's answer.
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if !serverClosed(c) {
		t.Error("the server kept a hijacked connection open after its client left, while its handler still ran")
	}
}

func TestListenURLs(t *testing.T) {
	s, err := Listen(Config{Address: "127.0.0.1:0"}, NewRuntime(&fakeContainers{}, fakeSandboxes{}))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve() }()
	defer s.Close()
	base := "http://" + s.Addr() + "/"
	exec, err := s.GetExec(&runtimeapi.ExecRequest{ContainerId: "c", Cmd: []string{"sh"}, Stdout: true})
	if err != nil {
		t.Fatal(err)
	}
	attach, err := s.GetAttach(&runtimeapi.AttachRequest{ContainerId: "c", Stdout: true})
	if err != nil {
		t.Fatal(err)
	}
	pf, err := s.GetPortForward(&runtimeapi.PortForwardRequest{PodSandboxId: "p"})
	if err != nil {
		t.Fatal(err)
	}
	for kind, url := range map[string]string{"exec": exec.Url, "attach": attach.Url, "portforward": pf.Url} {
		if !strings.HasPrefix(url, base+kind+"/") {
			t.Errorf("%s URL %q is not under %s%s/", kind, url, base, kind)
		}
	}
	// An unknown token is not found.
	resp, err := http.Get(base + "exec/not-a-token")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown token: status %d, want 404", resp.StatusCode)
	}
	if _, err := Listen(Config{Address: s.Addr()}, NewRuntime(&fakeContainers{}, fakeSandboxes{})); err == nil {
		t.Error("a second server listened on a busy address")
	}
}

// TestCloseWithoutServe: a server closed before it served (a daemon that
// failed to start) gives its port back.
func TestCloseWithoutServe(t *testing.T) {
	s, err := Listen(Config{Address: "127.0.0.1:0"}, NewRuntime(&fakeContainers{}, fakeSandboxes{}))
	if err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the port is still taken after Close: %v", err)
	}
	ln.Close()
}
