package streaming

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	cristreaming "k8s.io/cri-streaming/pkg/streaming"
)

// Config configures the streaming server.
type Config struct {
	// Address is the host:port to listen on; port 0 picks a free one.
	Address string
	// IdleTimeout closes a session's connection after that long without
	// traffic; zero means the library's default (4 hours).
	IdleTimeout time.Duration
}

// Server is crib's streaming server: the library's server on a listener
// of crib's own, whose connections give the requests served on them a
// context that ends with the connection.
type Server struct {
	lib   cristreaming.Server
	ln    net.Listener
	http  *http.Server
	conns *connSet
}

// Listen opens the server's listener on cfg.Address and builds the server
// over rt. Serve must follow.
func Listen(cfg Config, rt cristreaming.Runtime) (*Server, error) {
	ln, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("listen for streaming on %s: %w", cfg.Address, err)
	}
	lc := cristreaming.DefaultConfig
	lc.Addr = ln.Addr().String()
	lc.BaseURL = &url.URL{Scheme: "http", Host: lc.Addr}
	if cfg.IdleTimeout > 0 {
		lc.StreamIdleTimeout = cfg.IdleTimeout
	}
	lib, err := cristreaming.NewServer(lc, rt)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("create streaming server: %w", err)
	}
	conns := &connSet{m: map[*trackedConn]struct{}{}}
	s := &Server{lib: lib, ln: &trackingListener{Listener: ln, conns: conns}, conns: conns}
	s.http = newHTTPServer(lib)
	return s, nil
}

// newHTTPServer serves handler on trackedConns.
func newHTTPServer(handler http.Handler) *http.Server {
	return &http.Server{
		Handler:           closeHijacked(handler),
		ReadHeaderTimeout: 30 * time.Second,
		ConnContext:       connContext,
		ConnState:         connState,
	}
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve serves until Close; it returns nil after Close.
func (s *Server) Serve() error {
	err := s.http.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops the server and closes every connection, the sessions' too,
// which ends them. It closes the listener also when Serve never ran.
func (s *Server) Close() error {
	err := s.http.Close()
	if lerr := s.ln.Close(); lerr != nil && !errors.Is(lerr, net.ErrClosed) && err == nil {
		err = lerr
	}
	s.conns.closeAll()
	return err
}

// GetExec returns the URL of a new exec session.
func (s *Server) GetExec(req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return s.lib.GetExec(req)
}

// GetAttach returns the URL of a new attach session.
func (s *Server) GetAttach(req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return s.lib.GetAttach(req)
}

// GetPortForward returns the URL of a new port-forward session.
func (s *Server) GetPortForward(req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	return s.lib.GetPortForward(req)
}

// connContext gives a connection's requests a context that ends when the
// connection does, and that carries the connection for closeHijacked.
// Hijacked connections (every session's) are no longer watched by
// net/http, whose request context would otherwise outlive the client.
func connContext(ctx context.Context, c net.Conn) context.Context {
	tc, ok := c.(*trackedConn)
	if !ok {
		return ctx
	}
	ctx, cancel := context.WithCancel(ctx)
	tc.setCancel(cancel)
	return context.WithValue(ctx, connKey{}, tc)
}

// connKey is the context key of a request's trackedConn.
type connKey struct{}

// connState marks the connections a session took over.
func connState(c net.Conn, state http.ConnState) {
	if tc, ok := c.(*trackedConn); ok && state == http.StateHijacked {
		tc.setHijacked()
	}
}

// closeHijacked closes a hijacked connection once the library's handler
// returned. The library closes a session's connection itself, except when
// the session failed to start (the client did not create its streams in
// time, e.g. it was killed right after the upgrade): that connection
// would stay open, in CLOSE-WAIT once the client left, until a garbage
// collection finalised it.
func closeHijacked(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if tc, ok := r.Context().Value(connKey{}).(*trackedConn); ok && tc.isHijacked() {
			_ = tc.Close()
		}
	})
}

// trackingListener wraps accepted connections in trackedConns.
type trackingListener struct {
	net.Listener
	conns *connSet
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, set: l.conns}
	l.conns.add(tc)
	return tc, nil
}

// trackedConn is a connection that knows when it ended: a read that fails
// for another reason than a deadline (the peer went away) or Close.
type trackedConn struct {
	net.Conn
	set *connSet

	mu       sync.Mutex
	cancel   context.CancelFunc
	ended    bool
	hijacked bool
}

func (c *trackedConn) setHijacked() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hijacked = true
}

func (c *trackedConn) isHijacked() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hijacked
}

func (c *trackedConn) setCancel(cancel context.CancelFunc) {
	c.mu.Lock()
	ended := c.ended
	c.cancel = cancel
	c.mu.Unlock()
	if ended {
		cancel()
	}
}

func (c *trackedConn) end() {
	c.mu.Lock()
	c.ended = true
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		var ne net.Error
		if !(errors.As(err, &ne) && ne.Timeout()) {
			c.end()
			// A session's client is gone: close its side now. A session
			// that has not started yet (the client left before creating
			// its streams) would otherwise hold the connection until the
			// library's stream creation timeout (30 s) ends its wait.
			if c.isHijacked() {
				_ = c.Close()
			}
		}
	}
	return n, err
}

func (c *trackedConn) Close() error {
	c.end()
	c.set.remove(c)
	return c.Conn.Close()
}

// connSet holds the open connections.
type connSet struct {
	mu sync.Mutex
	m  map[*trackedConn]struct{}
}

func (s *connSet) add(c *trackedConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[c] = struct{}{}
}

func (s *connSet) remove(c *trackedConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, c)
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	all := make([]*trackedConn, 0, len(s.m))
	for c := range s.m {
		all = append(all, c)
	}
	s.mu.Unlock()
	for _, c := range all {
		_ = c.Close()
	}
}
