package nshold

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"
)

// startWait bounds how long Start waits for a holder it started to serve.
const startWait = 5 * time.Second

// Start connects to the holder serving socket, starting one first (`bin
// hold socket`, its output appended to logPath) when none serves it. The
// holder is a session of its own, so that it outlives the daemon as the
// monitors do; a holder of a daemon that died is found and kept.
func Start(bin, socket, logPath string) (*Client, error) {
	if c, err := Dial(socket); err == nil {
		return c, nil
	}
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start the namespace holder: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "hold", socket)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the namespace holder: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(startWait)
	for {
		c, err := Dial(socket)
		if err == nil {
			return c, nil
		}
		select {
		case werr := <-exited:
			return nil, fmt.Errorf("the namespace holder exited before it served (%v; see %s): %w", werr, logPath, err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return nil, fmt.Errorf("the namespace holder does not serve %s after %s: %w", socket, startWait, err)
		}
	}
}

// Lazy is a connection to the holder made on first need: a daemon that
// pins nothing starts no holder. A call that finds the connection broken
// (the holder was killed) connects anew, starting a new holder for a put.
// Each holder it connects to is watched: when one ends, Lost receives.
type Lazy struct {
	Bin, Socket, LogPath string

	mu     sync.Mutex
	c      *Client
	lost   chan struct{}
	closed bool
	// watches are the connections that wait for their holder to end.
	watches []*Client
	// lostPid is the holder whose end Lost was last told.
	lostPid int
}

// Lost receives after a holder this Lazy was connected to ended, what it
// held gone with it: pins that linked to it no longer open. A holder ends
// on its own when a drop empties it, and then nothing that was held is
// missed. Receipts coalesce.
func (l *Lazy) Lost() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostChan()
}

func (l *Lazy) lostChan() chan struct{} {
	if l.lost == nil {
		l.lost = make(chan struct{}, 1)
	}
	return l.lost
}

// client returns the connection, making it if start allows starting a
// holder; nil with no error means no holder serves and none was started.
// The caller holds l.mu.
func (l *Lazy) client(start bool) (*Client, error) {
	if l.c != nil {
		return l.c, nil
	}
	if l.closed {
		return nil, errors.New("namespace holder connection closed")
	}
	var err error
	if start {
		l.c, err = Start(l.Bin, l.Socket, l.LogPath)
	} else if c, derr := Dial(l.Socket); derr == nil {
		l.c = c
	}
	if l.c != nil {
		if werr := l.watch(l.c.Pid()); werr != nil {
			// An unwatched holder could die unnoticed, its pods' pins
			// dangling: no connection rather than that.
			l.c.Close()
			l.c = nil
			return nil, werr
		}
	}
	return l.c, err
}

// watch waits, on a connection of its own, for the holder pid to end and
// then tells Lost. It fails when it cannot connect to that holder (it
// ended meanwhile, or another serves).
func (l *Lazy) watch(pid int) error {
	w, err := Dial(l.Socket)
	if err != nil {
		return fmt.Errorf("watch the namespace holder: %w", err)
	}
	if w.Pid() != pid {
		w.Close()
		return fmt.Errorf("watch the namespace holder: holder %d serves, not %d", w.Pid(), pid)
	}
	l.watches = append(l.watches, w)
	lost := l.lostChan()
	go func() {
		buf := make([]byte, maxPacket)
		for {
			// The holder sends nothing unasked: a read returns only when
			// the connection ends.
			if _, err := w.conn.Read(buf); err != nil {
				break
			}
		}
		l.mu.Lock()
		// A dying holder may still accept a connection, which then ends
		// too: its end is told once.
		tell := !l.closed && l.lostPid != pid
		l.lostPid = pid
		l.watches = slices.DeleteFunc(l.watches, func(c *Client) bool { return c == w })
		if l.c != nil && l.c.Pid() == pid {
			l.c.Close()
			l.c = nil
		}
		l.mu.Unlock()
		w.Close()
		if tell {
			select {
			case lost <- struct{}{}:
			default:
			}
		}
	}()
	return nil
}

// forget drops a connection a call found broken and reports whether it
// did.
func (l *Lazy) forget(err error) bool {
	// A request that timed out leaves its reply to come: the connection
	// cannot be trusted for the next one either.
	broken := errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) ||
		errors.Is(err, os.ErrDeadlineExceeded)
	if broken && l.c != nil {
		l.c.Close()
		l.c = nil
	}
	return broken
}

// Put is Client.Put on the holder, started if need be. A holder that ended
// (it held nothing any more) or was killed meanwhile is replaced once.
func (l *Lazy) Put(key string, fd int) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for attempt := 0; ; attempt++ {
		c, err := l.client(true)
		if err != nil {
			if attempt == 0 {
				// A holder that was dying when connected to (its
				// watch could not follow): start a new one.
				continue
			}
			return "", err
		}
		path, err := c.Put(key, fd)
		if !l.forget(err) || attempt > 0 {
			return path, err
		}
	}
}

// Drop is Client.Drop; with no holder serving, nothing is held.
func (l *Lazy) Drop(prefix string) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, err := l.client(false)
	if err != nil || c == nil {
		return 0, err
	}
	n, err := c.Drop(prefix)
	if l.forget(err) {
		// The holder is gone, and what it held with it.
		return 0, nil
	}
	return n, err
}

// List is Client.List; with no holder serving, nothing is held. It
// connects to a holder that serves, which watches it from then on.
func (l *Lazy) List() (map[string]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, err := l.client(false)
	if err != nil || c == nil {
		return nil, err
	}
	held, err := c.List()
	if l.forget(err) {
		return nil, nil
	}
	return held, err
}

// Close closes the connections, if any; the holder keeps what it holds.
// Lost receives nothing after it.
func (l *Lazy) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for _, w := range l.watches {
		w.Close()
	}
	l.watches = nil
	if l.c == nil {
		return nil
	}
	err := l.c.Close()
	l.c = nil
	return err
}
