package monitor

import (
	"encoding/json"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/crib-dev/crib/internal/ociruntime"
)

// syncFd is the descriptor of the sync pipe in the monitor process.
const syncFd = 3

// execShimCommand is the argument that turns the monitor binary into the
// OCI runtime exec shim (see ociruntime.ExecShimMain).
const execShimCommand = "exec-shim"

// ExecShimArgs returns the ociruntime.Runtime.ExecShim prefix for the crib
// binary at selfExe.
func ExecShimArgs(selfExe string) []string {
	return []string{selfExe, "monitor", execShimCommand}
}

// startResult is what the monitor reports on the sync pipe.
type startResult struct {
	Pid   int    `json:"pid,omitempty"`
	Error string `json:"error,omitempty"`
}

// Main is the body of `crib monitor ARGS...` (and of `crib monitor
// exec-shim ...`). It returns the process exit status.
func Main(args []string) int {
	if len(args) > 0 && args[0] == execShimCommand {
		return ociruntime.ExecShimMain(args[1:])
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	var syncPipe *os.File
	if _, err := unix.FcntlInt(syncFd, unix.F_GETFD, 0); err == nil {
		unix.CloseOnExec(syncFd)
		syncPipe = os.NewFile(syncFd, "sync")
	}
	cfg, err := parseArgs(args)
	if err != nil {
		report(syncPipe, startResult{Error: err.Error()})
		logger.Error("bad arguments", "err", err)
		return 2
	}
	logger = logger.With("container", cfg.ID)
	// Our session has no terminal; stray hangups and broken pipes must
	// not end the monitor while the container runs.
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE, syscall.SIGINT)
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
