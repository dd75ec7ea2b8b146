package monitor

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
)

// ioTimeout bounds how long the monitor waits on a client's request or for
// a client to take its reply.
const ioTimeout = 10 * time.Second

// controlServer serves the control socket.
type controlServer struct {
	ln       *net.UnixListener
	path     string
	log      *logFile
	exited   chan struct{}
	exit     Exit // valid once exited is closed
	handlers sync.WaitGroup
	// attach is set before serve starts; nil refuses attach.
	attach *attachPoint
	// signal is set before serve starts; nil refuses signals.
	signal func(sig unix.Signal, all bool) error
}

// listenControl binds the control socket at path, replacing a stale one.
// A socket that still answers belongs to a live monitor and is left alone.
func listenControl(path string, log *logFile) (*controlServer, error) {
	if conn, err := net.DialTimeout("unix", path, time.Second); err == nil {
		_ = conn.Close()
		return nil, fmt.Errorf("listen on control socket %s: a monitor is already serving it: %w", path, errdefs.ErrAlreadyExists)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale control socket: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on control socket: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	return &controlServer{ln: ln, path: path, log: log, exited: make(chan struct{})}, nil
}

// serve accepts connections until the listener is closed.
func (s *controlServer) serve() {
	for {
		conn, err := s.ln.AcceptUnix()
		if err != nil {
			return
		}
		s.handlers.Add(1)
		go func() {
			defer s.handlers.Done()
			s.handle(conn)
		}()
	}
}

func (s *controlServer) handle(conn *net.UnixConn) {
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(ioTimeout))
	line, err := bufio.NewReaderSize(io.LimitReader(conn, maxRequest), maxRequest).ReadString('\n')
	if err != nil {
		return
	}
	var r reply
	cmd, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	switch cmd {
	case cmdAttach:
		s.serveAttach(conn)
		return
	case cmdReopenLog:
		if err := s.log.reopen(); err != nil {
			r.Error = err.Error()
		} else {
			r.OK = true
		}
	case cmdSignal:
		r = s.sendSignal(arg)
	case cmdWait:
		_ = conn.SetReadDeadline(time.Time{})
		<-s.exited
		e := s.exit
		r.OK, r.Exit = true, &e
	default:
		r.Error = fmt.Sprintf("unknown command %q", strings.TrimSpace(line))
	}
	b, _ := json.Marshal(r)
	_ = conn.SetWriteDeadline(time.Now().Add(ioTimeout))
	_, _ = conn.Write(append(b, '\n'))
}

// sendSignal answers "signal N" and "signal N all".
func (s *controlServer) sendSignal(arg string) reply {
	num, scope, _ := strings.Cut(arg, " ")
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 || n > 64 || (scope != "" && scope != signalAll) {
		return reply{Error: fmt.Sprintf("signal: bad arguments %q", arg)}
	}
	if s.signal == nil {
		return reply{Error: "signal: not served"}
	}
	switch err := s.signal(unix.Signal(n), scope == signalAll); {
	case errors.Is(err, errInitExited):
		return reply{Exited: true}
	case err != nil:
		return reply{Error: err.Error()}
	}
	return reply{OK: true}
}

// finish answers pending waits with e, stops accepting, removes the
// socket, and waits (at most timeout) for the answers to go out.
func (s *controlServer) finish(e Exit, timeout time.Duration) {
	s.exit = e
	close(s.exited)
	_ = s.ln.Close()
	done := make(chan struct{})
	go func() {
		s.handlers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(timeout):
	}
}

// abort closes the listener and removes the socket without an exit.
func (s *controlServer) abort() {
	_ = s.ln.Close()
}
