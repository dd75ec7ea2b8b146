package pause

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Main is the body of `crib pause`. It returns the process exit code.
func Main() int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGCHLD, unix.SIGTERM, unix.SIGINT)
	reap()
	for sig := range sigs {
		if sig != unix.SIGCHLD {
			return 0
		}
		reap()
	}
	return 0
}

// reap collects every child that has exited.
func reap() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if pid <= 0 || errors.Is(err, unix.ECHILD) {
			return
		}
	}
}

// Command is `self pause SANDBOX-ID`, not started, in a session of its
// own. The sandbox id on its command line lets a restarted daemon find a
// pause whose pid it never recorded (see Find).
func Command(self, sandboxID string) *exec.Cmd {
	cmd := exec.Command(self, "pause", sandboxID)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

// Start runs Command as the init of a new PID namespace and returns its pid
// on the host.
func Start(self, sandboxID string) (int, error) {
	cmd := Command(self, sandboxID)
	cmd.SysProcAttr.Cloneflags = unix.CLONE_NEWPID
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start pause: %w", err)
	}
	return Collect(cmd), nil
}

// Collect returns the pid of a started pause and collects the process
// when it dies while this daemon runs; after a daemon restart init
// collects it instead.
func Collect(cmd *exec.Cmd) int {
	go func() { _ = cmd.Wait() }()
	return cmd.Process.Pid
}

// Find returns the pids of the pause processes of sandboxID.
func Find(sandboxID string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if len(args) == 3 && args[1] == "pause" && args[2] == sandboxID {
			pids = append(pids, pid)
		}
	}
	return pids
}

// StartTime is the start time of pid in clock ticks since boot, the field
// that tells a live process from a later one that reused its pid. A zombie
// has none: it is dead.
func StartTime(pid int) (uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields are counted after the command name, which may hold spaces
	// and is closed by the last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 {
		return 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(fields))
	}
	if fields[0] == "Z" || fields[0] == "X" {
		return 0, fmt.Errorf("process %d is a zombie", pid)
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
	}
	return start, nil
}

// Alive reports whether the process pid that started at start still runs.
func Alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	got, err := StartTime(pid)
	return err == nil && got == start
}
