package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/crib-dev/crib/internal/ociruntime"
	"github.com/crib-dev/crib/internal/reap"
)

// reapTimeout bounds how long Start waits for a monitor that reported a
// failure to exit before it kills it.
const reapTimeout = 5 * time.Second

// Handle identifies a started monitor and its container.
type Handle struct {
	// ContainerPid is the container's init in the host PID namespace.
	ContainerPid int
	// MonitorPid is the monitor process.
	MonitorPid int
}

// Start launches the monitor for one container and returns once the
// container is created (not started: the caller starts it through the OCI
// runtime). On failure the error carries the runtime's message, classified
// as ociruntime does, and no monitor process remains. If ctx ends first the
// monitor is killed; the caller should then force-delete the container,
// which may have been created.
//
// The monitor runs in its own session with /dev/null as stdin and stdout,
// so that neither the daemon's signals nor its death reach it. The daemon
// reaps it in the background when it exits.
func Start(ctx context.Context, cfg StartConfig) (Handle, error) {
	if err := cfg.validate(); err != nil {
		return Handle{}, err
	}
	if cfg.Binary == "" {
		return Handle{}, fmt.Errorf("start monitor for %s: no monitor binary given", cfg.ID)
	}
	stderr, err := openMonitorLog(cfg.MonitorLog)
	if err != nil {
		return Handle{}, fmt.Errorf("start monitor for %s: %w", cfg.ID, err)
	}
	defer stderr.Close()
	syncR, syncW, err := os.Pipe()
	if err != nil {
		return Handle{}, fmt.Errorf("start monitor for %s: %w", cfg.ID, err)
	}
	p, err := spawn(cfg.Binary, append([]string{"monitor"}, cfg.args()...), stderr, syncW, syncR)
	if err != nil {
		return Handle{}, fmt.Errorf("start monitor for %s: %w", cfg.ID, err)
	}
	return p.await(ctx, cfg)
}

// process is a monitor process as the daemon sees it: conn is the daemon's
// end of its sync pipe or connection; done closes once it is reaped.
type process struct {
	cmd *exec.Cmd
	// pid is cmd.Process.Pid, read once at the start: the reaper releases
	// cmd.Process, which then says -1.
	pid  int
	conn *os.File
	done chan struct{}
}

// kill kills the monitor and its process group (the runtime's create is in
// it), unless it was reaped already, when its pid may be another
// process's by now.
func (p *process) kill() {
	select {
	case <-p.done:
	default:
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

// spawn starts self with args in its own session, childEnd as its fd 3 and
// stderr as its standard error, and reaps it in the background. It closes
// childEnd, which the child has its own copy of.
func spawn(self string, args []string, stderr, childEnd, conn *os.File) (*process, error) {
	cmd := exec.Command(self, args...)
	cmd.Stderr = stderr
	// A monitor copies two pipes and waits: one P is all it needs, and
	// each further P keeps caches of its own in every copy (about 0.2 MiB
	// of a monitor's 1.3 in BenchmarkMemoryPerPod). The monitor takes the
	// variable out of its environment once its runtime has read it (Main).
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.ExtraFiles = []*os.File{childEnd}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// Do not pin the daemon's working directory for the container's life.
	cmd.Dir = "/"
	err := cmd.Start()
	childEnd.Close()
	if err != nil {
		conn.Close()
		return nil, err
	}
	p := &process{cmd: cmd, pid: cmd.Process.Pid, conn: conn, done: make(chan struct{})}
	// Without a thread blocked in wait for the container's life.
	reap.InBackground(cmd, p.done)
	return p, nil
}

// await reads the monitor's report on the container's creation.
func (p *process) await(ctx context.Context, cfg StartConfig) (Handle, error) {
	defer p.conn.Close()
	results := make(chan startResult, 1)
	go func() { results <- readStartResult(p.conn) }()
	var res startResult
	select {
	case res = <-results:
	case <-ctx.Done():
		p.kill()
		<-p.done
		return Handle{}, fmt.Errorf("start monitor for %s: %w", cfg.ID, ctx.Err())
	}
	if res.Error != "" || res.Pid <= 0 {
		p.reap()
		if res.Error == "" {
			res.Error = "monitor exited without reporting" + monitorLogTail(cfg.MonitorLog)
		}
		return Handle{}, startError(cfg.ID, res.Error)
	}
	return Handle{ContainerPid: res.Pid, MonitorPid: p.pid}, nil
}

// reap waits for a failed monitor to exit, killing it if it lingers.
func (p *process) reap() {
	select {
	case <-p.done:
	case <-time.After(reapTimeout):
		p.kill()
		<-p.done
	}
}

// startError rebuilds the monitor's error, keeping its class: the message
// ends with the runtime's own text, which ociruntime.Classify understands.
func startError(id, msg string) error {
	return fmt.Errorf("start monitor for %s: %w", id, ociruntime.Classify(msg))
}

func readStartResult(r io.Reader) startResult {
	b, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil && len(b) == 0 {
		return startResult{Error: fmt.Sprintf("read sync pipe: %v", err)}
	}
	var res startResult
	if len(bytes.TrimSpace(b)) == 0 {
		return res
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return startResult{Error: fmt.Sprintf("decode monitor report %q: %v", b, err)}
	}
	return res
}

func openMonitorLog(path string) (*os.File, error) {
	if path == "" {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open monitor log: %w", err)
	}
	return f, nil
}

// monitorLogTail returns the end of the monitor log for error messages.
func monitorLogTail(path string) string {
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	const max = 512
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return ": " + strings.TrimSpace(string(b))
}
