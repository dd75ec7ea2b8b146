package ociruntime

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// WinSize is a terminal's size in character cells.
type WinSize struct {
	Width, Height uint16
}

// SetWinSize applies size to the terminal whose master is f
// (TIOCSWINSZ); the kernel signals the foreground process group.
func SetWinSize(f *os.File, size WinSize) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("resize terminal: %w", err)
	}
	var ioErr error
	err = rc.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: size.Height, Col: size.Width})
	})
	if err == nil {
		err = ioErr
	}
	if err != nil {
		return fmt.Errorf("resize terminal: %w", err)
	}
	return nil
}

// ConsoleSocket is the unix socket a runtime started with
// `--console-socket` connects to, to hand over the master end of the pty
// it made for the container's process.
type ConsoleSocket struct {
	dir string
	ln  *net.UnixListener
}

// NewConsoleSocket listens on a fresh socket in a private directory under
// dir (the system's temporary directory when empty).
func NewConsoleSocket(dir string) (*ConsoleSocket, error) {
	d, err := os.MkdirTemp(dir, "crib-console-")
	if err != nil {
		return nil, fmt.Errorf("create console socket: %w", err)
	}
	path := filepath.Join(d, "sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		os.RemoveAll(d)
		return nil, fmt.Errorf("create console socket: %w", err)
	}
	return &ConsoleSocket{dir: d, ln: ln}, nil
}

// Path is the socket to give the runtime.
func (s *ConsoleSocket) Path() string { return filepath.Join(s.dir, "sock") }

// Receive accepts the runtime's connection and returns the pty master it
// sends. The file is in non-blocking mode, so that its reads honour
// deadlines and end when it is closed. ctx ends the wait.
func (s *ConsoleSocket) Receive(ctx context.Context) (*os.File, error) {
	stop := context.AfterFunc(ctx, func() { _ = s.ln.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	conn, err := s.ln.AcceptUnix()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("receive pty master: %w", ctx.Err())
		}
		return nil, fmt.Errorf("receive pty master: %w", err)
	}
	defer conn.Close()
	stopConn := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stopConn()
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4*4))
	_, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("receive pty master: %w", err)
	}
	fds, err := parseRights(oob[:oobn])
	if err != nil {
		return nil, fmt.Errorf("receive pty master: %w", err)
	}
	for _, fd := range fds[1:] {
		unix.Close(fd)
	}
	unix.CloseOnExec(fds[0])
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		return nil, fmt.Errorf("receive pty master: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "pty-master"), nil
}

// parseRights returns the descriptors of SCM_RIGHTS messages in oob; it
// fails when there is none.
func parseRights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("parse control message: %w", err)
	}
	var fds []int
	for i := range msgs {
		got, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			continue
		}
		fds = append(fds, got...)
	}
	if len(fds) == 0 {
		return nil, errors.New("no descriptor in the message")
	}
	return fds, nil
}

// Close stops listening and removes the socket's directory.
func (s *ConsoleSocket) Close() error {
	err := s.ln.Close()
	if rerr := os.RemoveAll(s.dir); err == nil {
		err = rerr
	}
	return err
}
