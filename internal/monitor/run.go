package monitor

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crib-dev/crib/internal/ociruntime"
)

// drainTimeout bounds how long output is copied after the init exited: a
// process that outlived it (shared PID namespace) may hold the pipes.
const drainTimeout = 2 * time.Second

// monitor is one running monitor process.
type monitor struct {
	cfg    StartConfig
	logger *slog.Logger
}

// container is what create hands back: the init pid, the read ends of its
// output pipes, the write end of its stdin pipe (nil without stdin), and
// where its OOM kills are counted. A terminal container has its pty master
// as stdout (and as stdin when it has one) and no stderr.
type container struct {
	pid      int
	stdout   *os.File
	stderr   *os.File
	stdin    *os.File
	terminal *os.File
	oom      *oomWatch
	init     initProcess
}

// outputs are the container's output streams with their log names and
// attach frame kinds.
func (c *container) outputs() []output {
	out := []output{{StreamStdout, frameStdout, c.stdout}}
	if c.stderr != nil {
		out = append(out, output{StreamStderr, frameStderr, c.stderr})
	}
	return out
}

type output struct {
	name string
	kind byte
	r    *os.File
}

func (m *monitor) run(syncPipe *os.File) error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		err = fmt.Errorf("set child subreaper: %w", err)
		report(syncPipe, startResult{Error: err.Error()})
		return err
	}
	log, err := openLogFile(m.cfg.LogPath, time.Now)
	if err != nil {
		report(syncPipe, startResult{Error: err.Error()})
		return err
	}
	defer log.close()
	ctl, err := listenControl(m.cfg.Socket, log)
	if err != nil {
		report(syncPipe, startResult{Error: err.Error()})
		return err
	}
	c, err := m.create()
	if err != nil {
		ctl.abort()
		report(syncPipe, startResult{Error: err.Error()})
		return err
	}
	attach := &attachPoint{
		out:       newFanout(),
		in:        &stdinEnd{w: c.stdin, closeFile: c.terminal == nil},
		terminal:  c.terminal,
		stdinOnce: m.cfg.StdinOnce,
	}
	ctl.attach = attach
	ctl.signal = c.init.signal
	defer c.init.release()
	var copiers sync.WaitGroup
	var pipes []*os.File
	for _, s := range c.outputs() {
		copiers.Add(1)
		pipes = append(pipes, s.r)
		go func() {
			defer copiers.Done()
			// Attached clients get the bytes as they come, before the
			// log's line framing.
			r := io.TeeReader(s.r, attach.out.writer(s.kind))
			log.copyStream(r, s.name, func(err error) { m.logger.Error("log write failed", "err", err) })
		}()
	}
	go ctl.serve()
	report(syncPipe, startResult{Pid: c.pid})
	m.logger.Info("container created", "pid", c.pid)

	ws, exitedAt := reapInit(c.pid)
	e := Exit{Version: exitVersion, ExitCode: exitCode(ws), ExitedAt: exitedAt.UTC(), OOMKilled: c.oom.Killed(ws.Signaled() && ws.Signal() == unix.SIGKILL)}
	m.logger.Info("container exited", "exit_code", e.ExitCode, "oom_killed", e.OOMKilled)
	drain(&copiers, drainTimeout, pipes...)
	attach.out.close()
	attach.in.close()
	werr := writeExit(m.cfg.ExitFile, e)
	ctl.finish(e, drainTimeout)
	return werr
}

// create runs the runtime's create with pipes as the container's stdio.
func (m *monitor) create() (*container, error) {
	cfg := m.cfg
	rt := &ociruntime.Runtime{Binary: cfg.RuntimeBinary, Root: cfg.RuntimeRoot, SystemdCgroup: cfg.SystemdCgroup}
	runtimeLog := filepath.Join(filepath.Dir(cfg.PidFile), "runtime-create.log")
	if err := os.WriteFile(runtimeLog, nil, 0o640); err != nil {
		return nil, fmt.Errorf("create container %s: %w", cfg.ID, err)
	}
	if err := os.Remove(cfg.PidFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("create container %s: %w", cfg.ID, err)
	}
	if cfg.Terminal {
		return m.createTerminal(rt, runtimeLog)
	}
	p, err := newStdio(cfg.Stdin)
	if err != nil {
		return nil, fmt.Errorf("create container %s: %w", cfg.ID, err)
	}
	opts := ociruntime.CreateOpts{Bundle: cfg.Bundle, PidFile: cfg.PidFile, NoPivot: cfg.NoPivot, LogFile: runtimeLog}
	args := rt.CreateArgs(cfg.ID, opts)
	if cfg.Run {
		args = rt.RunArgs(cfg.ID, opts)
	}
	cmd := exec.Command(cfg.RuntimeBinary, args...)
	if cfg.Restore != "" {
		cmd = exec.Command(cfg.RuntimeBinary, rt.RestoreArgs(cfg.ID, opts, cfg.Restore, filepath.Dir(cfg.Restore))...)
		cmd.Env = ociruntime.CriuEnv(os.Environ(), cfg.Criu, cfg.CriuNoBreakpoints)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.childIn, p.childOut, p.childErr
	began := time.Now()
	runErr := cmd.Run()
	m.logger.Info("runtime returned", "args", args[len(args)-1], "duration", time.Since(began))
	p.closeChildEnds()
	if runErr != nil {
		p.closeOurEnds()
		msg := ociruntime.LastErrorInFile(runtimeLog)
		if msg == "" {
			msg = runErr.Error()
		}
		return nil, fmt.Errorf("create container %s: %w", cfg.ID, ociruntime.Classify(msg))
	}
	pid, err := ReadPidFile(cfg.PidFile)
	if err != nil {
		p.closeOurEnds()
		return nil, fmt.Errorf("create container %s: %w", cfg.ID, err)
	}
	return &container{pid: pid, stdout: p.out, stderr: p.errR, stdin: p.in, oom: watchOOM(pid), init: holdInit(pid)}, nil
}

// ReadPidFile reads the container's pid the runtime wrote at path. The
// daemon reads it too, for a container whose start it did not see end.
func ReadPidFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("read pid file %s: bad pid %q", path, b)
	}
	return pid, nil
}

// reapInit reaps children until pid is among them and returns its status
// and when it was reaped. Should pid not be a child (it always is: the
// monitor is a subreaper above the runtime), it waits for pid to vanish
// and reports an exit status of 255.
func reapInit(pid int) (unix.WaitStatus, time.Time) {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			for unix.Kill(pid, 0) == nil {
				time.Sleep(100 * time.Millisecond)
			}
			return unix.WaitStatus(255 << 8), time.Now()
		}
		if got == pid {
			return ws, time.Now()
		}
	}
}

// exitCode maps a wait status to a shell-style exit code.
func exitCode(ws unix.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// drain waits for the copiers to reach end of stream, at most timeout,
// then cuts the pipes so they return.
func drain(copiers *sync.WaitGroup, timeout time.Duration, pipes ...*os.File) {
	done := make(chan struct{})
	go func() {
		copiers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(timeout):
		for _, p := range pipes {
			_ = p.SetReadDeadline(time.Now())
		}
		<-done
	}
	for _, p := range pipes {
		_ = p.Close()
	}
}
