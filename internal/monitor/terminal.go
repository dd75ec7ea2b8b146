package monitor

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/crib-dev/crib/internal/ociruntime"
)

// consoleTimeout bounds the wait for the pty master once the runtime
// returned: it sends the master before it exits, so it is already queued.
const consoleTimeout = 10 * time.Second

// createTerminal runs the runtime's create (or run) for a terminal
// container: the runtime makes the pty and sends its master on a console
// socket; the monitor keeps the master as the container's output, and as
// its input when the container has stdin.
func (m *monitor) createTerminal(rt *ociruntime.Runtime, runtimeLog string) (*container, error) {
	cfg := m.cfg
	// The system's temporary directory: a socket path under the state
	// directory could exceed the kernel's limit.
	cs, err := ociruntime.NewConsoleSocket("")
	if err != nil {
		return nil, fmt.Errorf("create container %s: %w", cfg.ID, err)
	}
	defer cs.Close()
	opts := ociruntime.CreateOpts{
		Bundle: cfg.Bundle, PidFile: cfg.PidFile, NoPivot: cfg.NoPivot, LogFile: runtimeLog, ConsoleSocket: cs.Path(),
	}
	args := rt.CreateArgs(cfg.ID, opts)
	if cfg.Run {
		args = rt.RunArgs(cfg.ID, opts)
	}
	// The runtime's own stdio is /dev/null; the container's is the pty.
	cmd := exec.Command(cfg.RuntimeBinary, args...)
	began := time.Now()
	runErr := cmd.Run()
	m.logger.Info("runtime returned", "args", args[len(args)-1], "duration", time.Since(began), "terminal", true)
	if runErr != nil {
		msg := ociruntime.LastErrorInFile(runtimeLog)
		if msg == "" {
			msg = runErr.Error()
		}
		return nil, fmt.Errorf("create container %s: %w", cfg.ID, ociruntime.Classify(msg))
	}
	ctx, cancel := context.WithTimeout(context.Background(), consoleTimeout)
	defer cancel()
	master, err := cs.Receive(ctx)
	if err != nil {
		return nil, fmt.Errorf("create container %s: %w", cfg.ID, err)
	}
	pid, err := ReadPidFile(cfg.PidFile)
	if err != nil {
		master.Close()
		return nil, fmt.Errorf("create container %s: %w", cfg.ID, err)
	}
	c := &container{pid: pid, stdout: master, terminal: master, oom: watchOOM(pid), init: holdInit(pid)}
	if cfg.Stdin {
		c.stdin = master
	}
	return c, nil
}
