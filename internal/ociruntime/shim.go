package ociruntime

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// shimStatusFd is the descriptor on which the shim reports its result.
const shimStatusFd = 3

// shimResult is the one JSON line the shim writes on its status pipe.
type shimResult struct {
	ExitCode int    `json:"exit_code"`
	Error    string `json:"error,omitempty"`
}

func readShimResult(r io.Reader) (shimResult, error) {
	var res shimResult
	b, err := io.ReadAll(r)
	if len(b) == 0 {
		if err == nil {
			err = errors.New("no result reported")
		}
		return res, fmt.Errorf("read result: %w", err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return res, fmt.Errorf("decode result: %w", err)
	}
	return res, nil
}

// ExecShimMain is the body of the exec shim process. args are the pid file
// the runtime writes, then the runtime's full command line (binary first)
// for a detached exec. The shim makes itself a child subreaper, runs the
// runtime in its own process group with the shim's stdio, waits for the
// exec'd process (reparented to the shim when the runtime exits) and
// reports its exit code as JSON on descriptor 3. SIGTERM kills the runtime
// and the exec'd process group. It returns the shim's exit status.
func ExecShimMain(args []string) int {
	status := os.NewFile(shimStatusFd, "status")
	if status == nil {
		return 2
	}
	unix.CloseOnExec(shimStatusFd)
	res := runShim(args)
	_ = json.NewEncoder(status).Encode(res)
	_ = status.Close()
	if res.Error != "" {
		return 1
	}
	return 0
}

type reaped struct {
	pid    int
	status unix.WaitStatus
}

func runShim(args []string) shimResult {
	if len(args) < 2 {
		return shimResult{Error: "usage: exec-shim PIDFILE RUNTIME ARGS..."}
	}
	pidFile, argv := args[0], args[1:]
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return shimResult{Error: fmt.Sprintf("set child subreaper: %v", err)}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return shimResult{Error: fmt.Sprintf("find runtime: %v", err)}
	}
	proc, err := os.StartProcess(path, argv, &os.ProcAttr{
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		return shimResult{Error: fmt.Sprintf("start runtime: %v", err)}
	}
	runtimePid := proc.Pid
	children := make(chan reaped)
	go reapAll(children)

	var (
		runtimeDone bool
		execPid     int
		terminated  bool
		seen        = map[int]unix.WaitStatus{}
	)
	for {
		select {
		case <-sigs:
			terminated = true
			if !runtimeDone {
				_ = unix.Kill(runtimePid, unix.SIGKILL)
			}
			_ = unix.Kill(-runtimePid, unix.SIGKILL)
			if execPid > 0 {
				_ = unix.Kill(execPid, unix.SIGKILL)
			}
			killChildren()
		case c, ok := <-children:
			if !ok {
				if terminated {
					return shimResult{Error: "terminated"}
				}
				if !runtimeDone {
					return shimResult{Error: "runtime vanished"}
				}
				return shimResult{Error: "exec'd process was not reaped"}
			}
			seen[c.pid] = c.status
			if terminated {
				// A runtime killed before it wrote the pid file leaves
				// the exec'd process to this subreaper: kill whatever
				// child remains, until none does.
				killChildren()
				continue
			}
			if c.pid == runtimePid {
				runtimeDone = true
				if code := exitCode(c.status); code != 0 {
					return shimResult{Error: fmt.Sprintf("runtime exited with status %d", code)}
				}
				execPid = readPid(pidFile)
				if execPid <= 0 {
					return shimResult{Error: "runtime wrote no pid"}
				}
				if terminated {
					_ = unix.Kill(execPid, unix.SIGKILL)
					_ = unix.Kill(-runtimePid, unix.SIGKILL)
				}
			}
			if ws, ok := seen[execPid]; ok && runtimeDone {
				return shimResult{ExitCode: exitCode(ws)}
			}
		}
	}
}

// killChildren sends SIGKILL to every child of this process.
func killChildren() {
	self := os.Getpid()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		// The fields after the parenthesised command name: state, ppid.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil && ppid == self {
			if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
	}
}

// reapAll reaps every child until there is none left, then closes out.
func reapAll(out chan<- reaped) {
	defer close(out)
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return
		}
		out <- reaped{pid: pid, status: ws}
	}
}

// exitCode maps a wait status to a shell-style exit code.
func exitCode(ws unix.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// readPid reads a pid file; 0 when it is missing or malformed.
func readPid(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}
