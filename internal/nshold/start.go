package nshold

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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
type Lazy struct {
	Bin, Socket, LogPath string

	mu sync.Mutex
	c  *Client
}

// client returns the connection, making it if start allows starting a
// holder; nil with no error means no holder serves and none was started.
func (l *Lazy) client(start bool) (*Client, error) {
	if l.c != nil {
		return l.c, nil
	}
	var err error
	if start {
		l.c, err = Start(l.Bin, l.Socket, l.LogPath)
	} else if c, derr := Dial(l.Socket); derr == nil {
		l.c = c
	}
	return l.c, err
}

// forget drops a connection a call found broken and reports whether it
// did.
func (l *Lazy) forget(err error) bool {
	broken := errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF)
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

// Close closes the connection, if any; the holder keeps what it holds.
func (l *Lazy) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c == nil {
		return nil
	}
	err := l.c.Close()
	l.c = nil
	return err
}
