package monitor

import (
	"encoding/binary"
	"encoding/json"
	"net"
	"os"
	"sync"
	"time"

	"github.com/crib-dev/crib/internal/ociruntime"
)

// attachPoint is what attach sessions share: the output fan-out and the
// container's input.
type attachPoint struct {
	out *fanout
	in  *stdinEnd
	// terminal is the pty master of a terminal container, for resizes;
	// nil otherwise.
	terminal *os.File
	// stdinOnce closes the container's stdin when the first session that
	// sent input ends (not for a terminal, whose master is also its
	// output).
	stdinOnce bool
}

// stdinEnd is the monitor's end of the container's stdin: the write end of
// a pipe, or the pty master. Nil w means the container has no stdin.
type stdinEnd struct {
	mu     sync.Mutex
	w      *os.File
	closed bool
	// closeFile is false when w is a pty master, which the output copier
	// owns.
	closeFile bool
}

func (s *stdinEnd) write(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil || s.closed {
		return
	}
	_, _ = s.w.Write(p)
}

func (s *stdinEnd) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil || s.closed {
		return
	}
	s.closed = true
	if s.closeFile {
		_ = s.w.Close()
	}
}

// serveAttach runs one attach session on conn, whose command line was
// read. It answers, then sends the output as frames until the output ends
// (the container exited and was drained) or the client goes away, and
// applies the client's input and resizes meanwhile.
func (s *controlServer) serveAttach(conn *net.UnixConn) {
	_ = conn.SetReadDeadline(time.Time{})
	a := s.attach
	var r reply
	var out chan chunk
	if a == nil {
		r.Error = "attach is not available"
	} else if ch, ok := a.out.subscribe(); !ok {
		r.Error = "the container's output has ended"
	} else {
		out, r.OK = ch, true
	}
	b, _ := json.Marshal(r)
	_ = conn.SetWriteDeadline(time.Now().Add(ioTimeout))
	if _, err := conn.Write(append(b, '\n')); err != nil || out == nil {
		if out != nil {
			a.out.unsubscribe(out)
		}
		return
	}
	defer a.out.unsubscribe(out)
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		a.readInput(conn)
	}()
	for {
		select {
		case c, ok := <-out:
			if !ok {
				return
			}
			_ = conn.SetWriteDeadline(time.Now().Add(ioTimeout))
			if err := writeFrame(conn, c.kind, c.data); err != nil {
				return
			}
		case <-gone:
			return
		}
	}
}

// readInput applies the client's frames until it hangs up.
func (a *attachPoint) readInput(conn *net.UnixConn) {
	sentInput := false
	endInput := func() {
		if sentInput && a.stdinOnce && a.terminal == nil {
			a.in.close()
		}
	}
	defer endInput()
	for {
		kind, payload, err := readFrame(conn)
		if err != nil {
			return
		}
		switch kind {
		case frameStdin:
			sentInput = true
			a.in.write(payload)
		case frameStdinClose:
			sentInput = true
			endInput()
		case frameResize:
			if a.terminal != nil && len(payload) == 4 {
				_ = ociruntime.SetWinSize(a.terminal, ociruntime.WinSize{
					Width:  binary.BigEndian.Uint16(payload[0:2]),
					Height: binary.BigEndian.Uint16(payload[2:4]),
				})
			}
		}
	}
}
