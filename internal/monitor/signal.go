package monitor

import (
	"errors"
	"fmt"
	"os"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
)

// initProcess is the container's init held by a pidfd. The pidfd is opened
// as soon as the runtime has written the pid, before the monitor reaps
// anything: an exited init stays a zombie of the monitor (its subreaper)
// until then, so the pid cannot have gone to another process, and a signal
// through the pidfd reaches the init or nothing, never a stranger that
// later got the same pid.
type initProcess struct {
	pidfd *os.File // nil: the kernel has no pidfds (before 5.3)
}

// holdInit opens a pidfd of pid, the container's unreaped init.
func holdInit(pid int) initProcess {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return initProcess{}
	}
	return initProcess{pidfd: os.NewFile(uintptr(fd), "pidfd")}
}

// errInitExited is the answer to a signal for an init that has exited.
var errInitExited = fmt.Errorf("the container's init has exited: %w", errdefs.ErrNotFound)

// signal sends sig to the init. An init that has exited (reaped, or a
// zombie) yields errInitExited.
func (p initProcess) signal(sig unix.Signal) error {
	if p.pidfd == nil {
		return fmt.Errorf("signal the container's init: no pidfd: %w", errdefs.ErrNotImplemented)
	}
	rc, err := p.pidfd.SyscallConn()
	if err != nil {
		return fmt.Errorf("signal the container's init: %w", err)
	}
	var sendErr error
	if err := rc.Control(func(fd uintptr) {
		sendErr = unix.PidfdSendSignal(int(fd), sig, nil, 0)
	}); err != nil {
		return fmt.Errorf("signal the container's init: %w", err)
	}
	if errors.Is(sendErr, unix.ESRCH) {
		return errInitExited
	}
	if sendErr != nil {
		return fmt.Errorf("signal the container's init: %w", sendErr)
	}
	return nil
}

// release closes the pidfd; a signal after it fails cleanly (the file is
// closed), it cannot reach another descriptor.
func (p initProcess) release() {
	if p.pidfd != nil {
		_ = p.pidfd.Close()
	}
}
