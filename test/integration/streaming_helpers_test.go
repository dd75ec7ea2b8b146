package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crib-dev/crib/internal/testutil"
)

// crictlPath is where CI installs crictl.
const crictlPath = "/usr/local/bin/crictl"

// crictlTimeout bounds one crictl run.
const crictlTimeout = 60 * time.Second

// needCrictl skips the test when crictl is not installed.
func needCrictl(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(crictlPath); err != nil {
		t.Skipf("needs %s", crictlPath)
	}
}

// crictlCmd is crictl against this test's daemon, killed at ctx's end.
func (e *env) crictlCmd(ctx context.Context, args ...string) *exec.Cmd {
	full := append([]string{"--config", "/dev/null", "-r", "unix://" + e.d.Socket, "-t", "30s"}, args...)
	cmd := exec.CommandContext(ctx, crictlPath, full...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// crictl runs crictl with stdin (may be nil) to completion and returns its
// output and exit code.
func (e *env) crictl(stdin string, args ...string) (stdout, stderr string, code int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), crictlTimeout)
	defer cancel()
	cmd := e.crictlCmd(ctx, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		e.t.Fatalf("crictl %q did not finish within %s; stdout %q stderr %q", args, crictlTimeout, out.String(), errOut.String())
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	case err != nil:
		e.t.Fatalf("crictl %q: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// pty is a pseudo-terminal for crictl's -t: crictl gets the slave end as
// its stdio, the test reads and writes the master.
type pty struct {
	master, slave *os.File
	out           testutil.SyncBuffer
	copied        chan struct{}
}

// openPTY opens a pty, starts collecting its output and closes it at the
// test's end.
func openPTY(t *testing.T) *pty {
	t.Helper()
	p, err := newPTY()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	return p
}

// newPTY opens a pty and starts collecting its output.
func newPTY() (*pty, error) {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, err
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, err
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		master.Close()
		return nil, err
	}
	p := &pty{master: master, slave: slave, copied: make(chan struct{})}
	go func() {
		defer close(p.copied)
		_, _ = io.Copy(&p.out, master)
	}()
	return p, nil
}

// close closes both ends; the output copy ends with them.
func (p *pty) close() {
	p.slave.Close()
	p.master.Close()
}

// start runs cmd on the pty's slave and drops the test's copy of it, so
// that the master reads end once cmd is gone.
func (p *pty) start(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.slave, p.slave, p.slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.slave.Close()
}

func (p *pty) write(t *testing.T, s string) {
	t.Helper()
	if _, err := p.master.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// exitCode waits for cmd and returns its exit code.
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode()
	}
	if err != nil {
		t.Fatalf("wait for crictl: %v", err)
	}
	return 0
}

// countDir is the number of entries of a /proc directory, -1 on error.
// fdTargets says what each descriptor in a /proc/PID/fd directory is, as
// the links read ("socket:[123]", "/dev/null"), counted by kind.
func fdTargets(fdDir string) string {
	entries, err := os.ReadDir(fdDir)
	if err != nil {
		return err.Error()
	}
	kinds := map[string]int{}
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if err != nil {
			continue
		}
		if kind, _, ok := strings.Cut(target, ":["); ok && (kind == "socket" || kind == "pipe") {
			target = kind // kinds, not instances
		}
		kinds[target]++
	}
	return fmt.Sprint(kinds)
}

// sockets lists the sockets of process pid as ss(8) shows them.
func sockets(pid int) string {
	out, err := exec.Command("ss", "-axtnp").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("ss: %v", err)
	}
	var mine []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, fmt.Sprintf("pid=%d,", pid)) {
			mine = append(mine, line)
		}
	}
	return strings.Join(mine, "\n")
}

func countDir(path string) int {
	entries, err := os.ReadDir(path)
	if err != nil {
		return -1
	}
	return len(entries)
}
