package monitor

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
)

// TestInitSignal signals a real child through its pidfd, then signals it
// again once it has been reaped: the pid may belong to anyone by then, and
// the answer must be errInitExited, not a signal sent.
func TestInitSignal(t *testing.T) {
	cmd := exec.Command("sleep", "3600")
	p := startHeld(t, cmd)
	if p.nsInit {
		t.Errorf("a child in the host's PID namespace taken for a namespace's init")
	}
	// All its processes: only the runtime can, by cgroup.
	if err := p.signal(unix.SIGKILL, true); !errdefs.IsNotImplemented(err) {
		t.Errorf("kill all of a process that is not its namespace's init: %v, want not implemented", err)
	}
	if err := p.signal(unix.SIGTERM, false); err != nil {
		t.Fatalf("signal a running process: %v", err)
	}
	wantKilledBy(t, cmd, syscall.SIGTERM)
	if err := p.signal(unix.SIGKILL, false); !errors.Is(err, errInitExited) {
		t.Fatalf("signal a reaped process: %v, want errInitExited", err)
	}
	p.release()
	if err := p.signal(unix.SIGKILL, false); err == nil || errors.Is(err, errInitExited) {
		t.Fatalf("signal after release: %v, want a closed-file error", err)
	}
}

// TestNamespaceInitKilledWhole: the init of a new PID namespace is seen as
// such, and its SIGKILL "to all" is sent (the kernel ends the namespace).
func TestNamespaceInitKilledWhole(t *testing.T) {
	if unix.Geteuid() != 0 {
		t.Skip("needs root for a PID namespace")
	}
	cmd := exec.Command("sleep", "3600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	p := startHeld(t, cmd)
	if !p.nsInit {
		t.Errorf("the init of a new PID namespace not seen as such")
	}
	if err := p.signal(unix.SIGTERM, true); !errdefs.IsNotImplemented(err) {
		t.Errorf("SIGTERM to all: %v, want not implemented (only a SIGKILL ends a namespace)", err)
	}
	if err := p.signal(unix.SIGKILL, true); err != nil {
		t.Fatalf("kill all: %v", err)
	}
	wantKilledBy(t, cmd, syscall.SIGKILL)
}

// startHeld starts cmd and holds it as monitor holds a container's init,
// skipping the test on a kernel without pidfds. The process is released
// (and killed, should the test end early) at the test's end.
func startHeld(t *testing.T, cmd *exec.Cmd) initProcess {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := holdInit(cmd.Process.Pid)
	t.Cleanup(func() {
		p.release()
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	if p.pidfd == nil {
		t.Skip("no pidfds on this kernel")
	}
	return p
}

// wantKilledBy waits for cmd and fails unless sig ended it.
func wantKilledBy(t *testing.T, cmd *exec.Cmd, sig syscall.Signal) {
	t.Helper()
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ProcessState.Sys().(syscall.WaitStatus).Signal() != sig {
		t.Fatalf("process ended with %v, want killed by %v", err, sig)
	}
}

func TestInnermostPid(t *testing.T) {
	for status, want := range map[string]int{
		"Name:\tsleep\nNSpid:\t4242\t1\nThreads:\t1\n": 1,
		"Name:\tsleep\nNSpid:\t4242\nThreads:\t1\n":    4242,
		"Name:\tsleep\nNSpid:\t4242\t17\t1\n":          1,
		"Name:\tsleep\n":                               0,
		"NSpid:\n":                                     0,
	} {
		if got := innermostPid([]byte(status)); got != want {
			t.Errorf("innermostPid(%q) = %d, want %d", status, got, want)
		}
	}
}
