// Package reap collects the daemon's child processes without holding an
// OS thread for each.
//
// exec.Cmd.Wait blocks its thread in a wait system call until the child
// exits, and the Go runtime never ends a thread it has made: a daemon that
// waits so for a process per pod (its pause, its monitors) makes a thread
// per pod it ever ran at once, and keeps them, with their stacks, after
// the pods are removed. Waiting on a pidfd in the runtime's poller holds
// no thread.
package reap

import (
	"os"
	"os/exec"

	"golang.org/x/sys/unix"
)

// InBackground reaps cmd's started process once it exits and then closes
// done (if not nil). It waits on a pidfd in the Go runtime's poller; on a
// kernel without pidfds (Linux before 5.10) it waits in a goroutine of its
// own, as cmd.Wait does.
func InBackground(cmd *exec.Cmd, done chan struct{}) {
	finish := func() {
		if done != nil {
			close(done)
		}
	}
	waitInThread := func() {
		go func() {
			_ = cmd.Wait()
			finish()
		}()
	}
	fd, err := unix.PidfdOpen(cmd.Process.Pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		waitInThread()
		return
	}
	pidfd := os.NewFile(uintptr(fd), "pidfd")
	rc, err := pidfd.SyscallConn()
	if err != nil {
		pidfd.Close()
		waitInThread()
		return
	}
	go func() {
		defer pidfd.Close()
		// The pidfd is non-blocking: waitid reaps the process if it has
		// exited and says EAGAIN if not, and the poller calls again once
		// the pidfd is readable, which it becomes when the process exits.
		err := rc.Read(func(fd uintptr) bool {
			var info unix.Siginfo
			return unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED, nil) != unix.EAGAIN
		})
		if err != nil {
			waitInThread()
			return
		}
		_ = cmd.Process.Release()
		finish()
	}()
}
