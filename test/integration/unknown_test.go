package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// TestContainerUnknownAfterRestart loses a container's monitor and exit
// record while the daemon is down, with the container itself still
// running: after the restart nothing can tell its state, so it is Unknown,
// and stopping and removing it must still work and leave nothing behind.
func TestContainerUnknownAfterRestart(t *testing.T) {
	e := newEnv(t)
	pod := e.podConfig("unknown")
	podID := e.runPod(pod)
	id := e.run(podID, pod, e.ctrConfig("lost", "sleep", "3600"))
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)

	pid := e.containerPid(id)
	start := procStart(pid)
	if start == "" {
		t.Fatalf("container init %d is not alive", pid)
	}
	mon := ppid(t, pid)
	if cmd := cmdline(mon); !strings.Contains(cmd, " monitor") {
		t.Fatalf("parent %d of container init %d runs %q, not a crib monitor", mon, pid, cmd)
	}
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", mon)); exe != testutil.MonitorBinary(e.d.Binary) {
		t.Fatalf("monitor %d runs %s, not the daemon's crib-monitor %s", mon, exe, testutil.MonitorBinary(e.d.Binary))
	}
	monStart := procStart(mon)

	e.d.Kill9(t)
	if err := syscall.Kill(mon, syscall.SIGKILL); err != nil {
		t.Fatalf("kill monitor %d: %v", mon, err)
	}
	eventually(t, 10*time.Second, "the monitor to die", func() bool { return procStart(mon) != monStart })
	if procStart(pid) != start {
		t.Fatalf("container init %d died with its monitor", pid)
	}
	exitFile := filepath.Join(e.d.State, "containers", id, "exit.json")
	if err := os.Remove(exitFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}

	e.d.Restart(t)

	st := e.waitState(id, runtimeapi.ContainerState_CONTAINER_UNKNOWN, 10*time.Second)
	if st.Reason != "Unknown" {
		t.Errorf("unknown container: reason %q (message %q), want Unknown", st.Reason, st.Message)
	}
	t.Logf("after restart: %s reason %q message %q", st.State, st.Reason, st.Message)
	if procStart(pid) != start {
		t.Fatalf("container init %d died during the restart", pid)
	}
	ctrs, err := e.rt().ListContainers(e.ctx(), &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ctrs.Containers) != 1 || ctrs.Containers[0].State != runtimeapi.ContainerState_CONTAINER_UNKNOWN {
		t.Errorf("ListContainers = %v, want the one unknown container", ctrs.Containers)
	}

	if _, err := e.rt().StopContainer(e.ctx(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 10}); err != nil {
		t.Fatalf("StopContainer of an unknown container: %v", err)
	}
	// Only the runtime can kill it now: its monitor is gone.
	eventually(t, 10*time.Second, "the unknown container's process to be killed", func() bool { return procStart(pid) != start })
	st = e.status(id)
	t.Logf("after stop: %s exit code %d reason %q", st.State, st.ExitCode, st.Reason)
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("stopped unknown container is %s, want EXITED", st.State)
	}
	if _, err := e.rt().RemoveContainer(e.ctx(), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatalf("RemoveContainer of an unknown container: %v", err)
	}
	if _, err := e.rt().ContainerStatus(e.ctx(), &runtimeapi.ContainerStatusRequest{ContainerId: id}); err == nil {
		t.Errorf("ContainerStatus of a removed container succeeded")
	}
	if _, err := e.rt().StopPodSandbox(e.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt().RemovePodSandbox(e.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatal(err)
	}
	e.noLeaks(t)
}

// containerPid is the host pid of a running container's init, from
// ContainerStatus's verbose info.
func (e *env) containerPid(id string) int {
	e.t.Helper()
	resp, err := e.rt().ContainerStatus(e.ctx(), &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		e.t.Fatalf("ContainerStatus %s: %v", id, err)
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(resp.Info["info"]), &info); err != nil || info.Pid <= 0 {
		e.t.Fatalf("verbose info of %s has no pid: %q (%v)", id, resp.Info["info"], err)
	}
	return info.Pid
}

// noLeaks fails the test unless the daemon leaves nothing on the machine.
func (e *env) noLeaks(t *testing.T) {
	t.Helper()
	if leaks := e.waitLeaks(); len(leaks) != 0 {
		t.Errorf("leaks:\n  %s", strings.Join(leaks, "\n  "))
	}
}

// waitLeaks polls the daemon's leak check until it is clean or 10 s have
// passed (killed processes take a moment to go) and returns its last
// answer.
func (e *env) waitLeaks() []string {
	deadline := time.Now().Add(10 * time.Second)
	for {
		leaks := e.d.Leaks()
		if len(leaks) == 0 || time.Now().After(deadline) {
			return leaks
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// procStart identifies a live process: its start time in clock ticks, or
// "" when pid is gone or a zombie.
func procStart(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return ""
	}
	return f[19]
}

// ppid is the parent of pid.
func ppid(t *testing.T, pid int) int {
	t.Helper()
	return testutil.ProcStatus(t, pid, "PPid")
}

// cmdline is pid's command line, arguments joined by spaces.
func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}
