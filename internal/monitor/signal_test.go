package monitor

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestInitSignal signals a real child through its pidfd, then signals it
// again once it has been reaped: the pid may belong to anyone by then, and
// the answer must be errInitExited, not a signal sent.
func TestInitSignal(t *testing.T) {
	cmd := exec.Command("sleep", "3600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := holdInit(cmd.Process.Pid)
	defer p.release()
	if p.pidfd == nil {
		t.Skip("no pidfds on this kernel")
	}
	if err := p.signal(unix.SIGTERM); err != nil {
		t.Fatalf("signal a running process: %v", err)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Fatalf("process ended with %v, want killed by SIGTERM", err)
	}
	if err := p.signal(unix.SIGKILL); !errors.Is(err, errInitExited) {
		t.Fatalf("signal a reaped process: %v, want errInitExited", err)
	}
	p.release()
	if err := p.signal(unix.SIGKILL); err == nil || errors.Is(err, errInitExited) {
		t.Fatalf("signal after release: %v, want a closed-file error", err)
	}
}
