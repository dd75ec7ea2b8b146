package monitor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/crib-dev/crib/internal/ociruntime"
)

// syncFd is the descriptor of the sync pipe in the monitor process.
const syncFd = 3

// idleCommand is the argument of a monitor started ahead of need.
const idleCommand = "idle"

// execShimCommand is the argument that turns the monitor binary into the
// OCI runtime exec shim (see ociruntime.ExecShimMain).
const execShimCommand = "exec-shim"

// ExecShimArgs returns the ociruntime.Runtime.ExecShim prefix for the
// monitor binary bin (crib-monitor, or crib).
func ExecShimArgs(bin string) []string {
	return []string{bin, "monitor", execShimCommand}
}

// startResult is what the monitor reports on the sync pipe.
type startResult struct {
	Pid   int    `json:"pid,omitempty"`
	Error string `json:"error,omitempty"`
}

// Main is the body of `crib-monitor monitor ARGS...` (and of its
// `monitor exec-shim ...`; crib's own `monitor` subcommand is the same). It returns the process exit status.
func Main(args []string) int {
	// The daemon starts monitors with GOMAXPROCS=1 (see spawn): the Go
	// runtime has read it, and the OCI runtime must not inherit it.
	os.Unsetenv("GOMAXPROCS")
	if len(args) > 0 {
		switch args[0] {
		case execShimCommand:
			return ociruntime.ExecShimMain(args[1:])
		case idleCommand:
			return idleMain()
		}
	}
	var syncPipe *os.File
	if _, err := unix.FcntlInt(syncFd, unix.F_GETFD, 0); err == nil {
		unix.CloseOnExec(syncFd)
		syncPipe = os.NewFile(syncFd, "sync")
	}
	cfg, err := parseArgs(args)
	if err != nil {
		report(syncPipe, startResult{Error: err.Error()})
		slog.Error("bad arguments", "err", err)
		return 2
	}
	return serve(cfg, syncPipe)
}

// idleMain is a monitor started ahead of need (see Pool): it waits for its
// container's configuration on the connection to the daemon, and quits
// quietly when the daemon closes it first.
func idleMain() int {
	if _, err := unix.FcntlInt(syncFd, unix.F_GETFD, 0); err != nil {
		slog.Error("idle monitor without a daemon connection", "err", err)
		return 2
	}
	unix.CloseOnExec(syncFd)
	conn := os.NewFile(syncFd, "daemon")
	var cfg StartConfig
	if err := json.NewDecoder(conn).Decode(&cfg); err != nil {
		if errors.Is(err, io.EOF) {
			return 0
		}
		report(conn, startResult{Error: fmt.Sprintf("read monitor config: %v", err)})
		return 2
	}
	if err := cfg.validate(); err != nil {
		report(conn, startResult{Error: err.Error()})
		return 2
	}
	if cfg.MonitorLog != "" {
		f, err := openMonitorLog(cfg.MonitorLog)
		if err != nil {
			report(conn, startResult{Error: err.Error()})
			return 2
		}
		_ = unix.Dup3(int(f.Fd()), 2, 0)
		f.Close()
	}
	return serve(cfg, conn)
}

// serve runs the monitor of cfg's container, reporting the create result
// on syncPipe.
func serve(cfg StartConfig, syncPipe *os.File) int {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("container", cfg.ID)
	// The monitor ends when its container ends. Hangups, broken pipes and
	// polite termination requests (a service manager stopping the daemon)
	// must not end it early: the container would lose its stdout and die
	// of SIGPIPE on its next write. SIGKILL still works.
	// Catch rather than ignore them: an ignored disposition would be
	// inherited by the runtime and by the container's process.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGPIPE, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for sig := range sigs {
			logger.Info("ignoring signal", "signal", sig.String())
		}
	}()
	m := &monitor{cfg: cfg, logger: logger}
	if err := m.run(syncPipe); err != nil {
		logger.Error("monitor failed", "err", err)
		return 1
	}
	return 0
}

// report writes the start result on the sync pipe and closes it. A daemon
// that died meanwhile makes the write fail; that is fine.
func report(syncPipe *os.File, r startResult) {
	if syncPipe == nil {
		return
	}
	b, _ := json.Marshal(r)
	_, _ = syncPipe.Write(append(b, '\n'))
	_ = syncPipe.Close()
}
