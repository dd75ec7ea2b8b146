package monitor

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
)

// initProcess is the container's init held by a pidfd. The pidfd is opened
// once the runtime's create (or run, or restore) has returned, before the
// monitor reaps anything. The init became the monitor's child when the
// runtime exited (the monitor is a subreaper), and an exited init stays its
// unreaped zombie until then, so the pid cannot have gone to another
// process: a signal through the pidfd reaches the init or nothing, never a
// stranger that later got the same pid.
type initProcess struct {
	pidfd *os.File // nil: the kernel has no pidfds (before 5.3)
	// nsInit: the init is the init (pid 1) of its own PID namespace, read
	// from the kernel rather than from the container's configuration, which
	// an NRI plugin may have changed. Its SIGKILL then ends every process
	// of the namespace.
	nsInit bool
}

// holdInit opens a pidfd of pid, the container's unreaped init.
func holdInit(pid int) initProcess {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return initProcess{}
	}
	p := initProcess{pidfd: os.NewFile(uintptr(fd), "pidfd")}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	p.nsInit = err == nil && innermostPid(status) == 1
	return p
}

// innermostPid is the process's pid in the innermost PID namespace it is
// in: the last number of the NSpid line of /proc/PID/status (0 if none).
func innermostPid(status []byte) int {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("NSpid:"))
		if !ok {
			continue
		}
		fields := bytes.Fields(rest)
		if len(fields) == 0 {
			return 0
		}
		n, _ := strconv.Atoi(string(fields[len(fields)-1]))
		return n
	}
	return 0
}

// errInitExited is the answer to a signal for an init that the monitor
// has reaped.
var errInitExited = fmt.Errorf("the container's init has exited: %w", errdefs.ErrNotFound)

// signal sends sig to the init; with all, to every process of the
// container, which it can only do as a SIGKILL of a PID namespace's init.
// Once the init is reaped it yields errInitExited (a zombie not yet reaped
// takes the signal and drops it).
func (p initProcess) signal(sig unix.Signal, all bool) error {
	if p.pidfd == nil {
		return fmt.Errorf("signal the container's init: no pidfd: %w", errdefs.ErrNotImplemented)
	}
	if all && (sig != unix.SIGKILL || !p.nsInit) {
		return fmt.Errorf("signal %d to all the container's processes: only the runtime can, by cgroup: %w", sig, errdefs.ErrNotImplemented)
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
