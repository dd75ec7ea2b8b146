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

	children "github.com/crib-dev/crib/internal/reap"
)

// isolateEnv tells a pause started by Isolate to leave the host's file
// system: its command line must stay `BINARY pause ID` for Find.
const isolateEnv = "CRIB_PAUSE_ISOLATE"

// Main is the body of `crib-monitor pause` (and `crib pause`). It returns the process exit code.
func Main() int {
	if os.Getenv(isolateEnv) != "" {
		if err := emptyRoot(); err != nil {
			fmt.Fprintf(os.Stderr, "crib pause: %v\n", err)
			return 1
		}
	}
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
	// It reaps and waits for the pod's whole life: one P is plenty.
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
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

// Isolate makes cmd, a pause not yet started, run in a mount namespace of
// its own with an empty root. A pod's processes reach their PID 1's root
// through /proc/1/root: in a pod of its own user namespace, where the pod's
// root may hold CAP_SYS_PTRACE, that must not be the host's.
func Isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr.Cloneflags |= unix.CLONE_NEWNS
	cmd.Dir = "/"
	cmd.Env = append(cmd.Env, isolateEnv+"=1")
}

// emptyRoot makes an empty read-only tmpfs the root of this process's
// mount namespace, which must be its own, and detaches the host's.
func emptyRoot() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %w", err)
	}
	var dir string
	for _, d := range []string{"/tmp", "/run", "/mnt"} {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			dir = d
			break
		}
	}
	if dir == "" {
		return errors.New("no directory to mount an empty root on")
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=16k,mode=0700"); err != nil {
		return fmt.Errorf("mount an empty root: %w", err)
	}
	if err := os.Mkdir(dir+"/old", 0o700); err != nil {
		return fmt.Errorf("mount an empty root: %w", err)
	}
	if err := unix.PivotRoot(dir, dir+"/old"); err != nil {
		return fmt.Errorf("pivot to an empty root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("pivot to an empty root: %w", err)
	}
	if err := unix.Unmount("/old", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host's root: %w", err)
	}
	if err := os.Remove("/old"); err != nil {
		return fmt.Errorf("detach the host's root: %w", err)
	}
	return unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, "")
}

// Collect returns the pid of a started pause and collects the process
// when it dies while this daemon runs, without a thread waiting for it for
// the pod's life (reap); after a daemon restart init collects it instead.
func Collect(cmd *exec.Cmd) int {
	pid := cmd.Process.Pid
	children.InBackground(cmd, nil)
	return pid
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
