package monitor

import (
	"flag"
	"fmt"
	"strconv"

	"github.com/containerd/errdefs"
)

// maxSocketPath is the longest unix socket path the kernel accepts.
const maxSocketPath = 107

// StartConfig describes one container's monitor. Paths are absolute.
type StartConfig struct {
	// ID is the container id, as the OCI runtime knows it.
	ID string
	// Bundle is the OCI bundle directory.
	Bundle string
	// RuntimeBinary, RuntimeRoot and SystemdCgroup configure the OCI
	// runtime as ociruntime.Runtime does.
	RuntimeBinary string
	RuntimeRoot   string
	SystemdCgroup bool
	// NoPivot creates the container without pivot_root.
	NoPivot bool
	// Run starts the container as well (the runtime's `run --detach`)
	// instead of only creating it.
	Run bool
	// Restore, when set, is a directory of CRIU images the container's
	// processes are restored from (the runtime's `restore --detach`)
	// instead of being started; Criu and CriuNoBreakpoints are as
	// ociruntime.CriuEnv takes them.
	Restore           string
	Criu              string
	CriuNoBreakpoints bool
	// LogPath is the CRI log file; its directory must exist. Empty
	// discards the output.
	LogPath string
	// ExitFile receives the exit record.
	ExitFile string
	// Socket is the monitor's control socket.
	Socket string
	// PidFile receives the container's init pid. Its directory also holds
	// runtime-create.log, the runtime's own log of the create.
	PidFile string
	// MonitorLog receives the monitor's own diagnostics (its stderr).
	// Empty means /dev/null.
	MonitorLog string
	// Stdin gives the container a stdin pipe held open by the monitor;
	// otherwise its stdin is /dev/null. StdinOnce is recorded for attach.
	Stdin     bool
	StdinOnce bool
	// Terminal gives the container a pty (the runtime's console socket);
	// the monitor owns its master: output goes to the log as stdout, and
	// attach sessions write its input and resize it.
	Terminal bool
	// Binary is crib-monitor (or crib); Start runs `Binary monitor ARGS...`.
	Binary string
}

// validate checks what the monitor cannot work without.
func (c *StartConfig) validate() error {
	for _, f := range []struct{ name, val string }{
		{"id", c.ID}, {"bundle", c.Bundle}, {"runtime binary", c.RuntimeBinary},
		{"exit file", c.ExitFile}, {"socket", c.Socket}, {"pid file", c.PidFile},
	} {
		if f.val == "" {
			return fmt.Errorf("monitor config: no %s: %w", f.name, errdefs.ErrInvalidArgument)
		}
	}
	if len(c.Socket) > maxSocketPath {
		return fmt.Errorf("monitor config: socket path %q longer than %d bytes: %w", c.Socket, maxSocketPath, errdefs.ErrInvalidArgument)
	}
	return nil
}

// args encodes the config as the monitor's command line.
func (c *StartConfig) args() []string {
	return []string{
		"--id=" + c.ID,
		"--bundle=" + c.Bundle,
		"--runtime=" + c.RuntimeBinary,
		"--runtime-root=" + c.RuntimeRoot,
		"--systemd-cgroup=" + strconv.FormatBool(c.SystemdCgroup),
		"--no-pivot=" + strconv.FormatBool(c.NoPivot),
		"--run=" + strconv.FormatBool(c.Run),
		"--restore=" + c.Restore,
		"--criu=" + c.Criu,
		"--criu-no-breakpoints=" + strconv.FormatBool(c.CriuNoBreakpoints),
		"--log-path=" + c.LogPath,
		"--exit-file=" + c.ExitFile,
		"--socket=" + c.Socket,
		"--pid-file=" + c.PidFile,
		"--stdin=" + strconv.FormatBool(c.Stdin),
		"--stdin-once=" + strconv.FormatBool(c.StdinOnce),
		"--terminal=" + strconv.FormatBool(c.Terminal),
	}
}

// parseArgs decodes a monitor command line made by args.
func parseArgs(argv []string) (StartConfig, error) {
	var c StartConfig
	fs := flag.NewFlagSet("monitor", flag.ContinueOnError)
	fs.StringVar(&c.ID, "id", "", "container id")
	fs.StringVar(&c.Bundle, "bundle", "", "OCI bundle directory")
	fs.StringVar(&c.RuntimeBinary, "runtime", "", "OCI runtime binary")
	fs.StringVar(&c.RuntimeRoot, "runtime-root", "", "OCI runtime state root")
	fs.BoolVar(&c.SystemdCgroup, "systemd-cgroup", false, "use systemd cgroups")
	fs.BoolVar(&c.NoPivot, "no-pivot", false, "create without pivot_root")
	fs.BoolVar(&c.Run, "run", false, "start the container too")
	fs.StringVar(&c.Restore, "restore", "", "restore from these CRIU images")
	fs.StringVar(&c.Criu, "criu", "", "criu binary")
	fs.BoolVar(&c.CriuNoBreakpoints, "criu-no-breakpoints", false, "CRIU without hardware breakpoints")
	fs.StringVar(&c.LogPath, "log-path", "", "CRI log file")
	fs.StringVar(&c.ExitFile, "exit-file", "", "exit record file")
	fs.StringVar(&c.Socket, "socket", "", "control socket")
	fs.StringVar(&c.PidFile, "pid-file", "", "container pid file")
	fs.BoolVar(&c.Stdin, "stdin", false, "keep a stdin pipe")
	fs.BoolVar(&c.StdinOnce, "stdin-once", false, "close stdin after the first attach")
	fs.BoolVar(&c.Terminal, "terminal", false, "allocate a pty")
	if err := fs.Parse(argv); err != nil {
		return c, fmt.Errorf("parse monitor arguments: %w", err)
	}
	if fs.NArg() != 0 {
		return c, fmt.Errorf("parse monitor arguments: unexpected %q: %w", fs.Args(), errdefs.ErrInvalidArgument)
	}
	return c, nil
}
