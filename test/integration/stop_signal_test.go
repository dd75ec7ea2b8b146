package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// TestStopSignalsThroughMonitor checks who signals a stopping container.
// The monitor sends the stop signal, and the SIGKILL of a container that
// is the init of its own PID namespace, through its pidfd of the init:
// the runtime's kill is not run, and still nothing of the container is
// left. A container in the pod's shared PID namespace, whose init is not
// its namespace's, is killed by the runtime (`kill --all`), which finds
// its processes by cgroup.
func TestStopSignalsThroughMonitor(t *testing.T) {
	e := newEnv(t)
	// A runc that records its arguments.
	calls := filepath.Join(e.d.Dir, "runc-calls")
	e.wrapRunc("recording-runc", fmt.Sprintf(`echo " $* " >> %s`, calls))

	// kills returns the runtime's kill calls since the last call.
	kills := func() []string {
		t.Helper()
		b, err := os.ReadFile(calls)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := os.WriteFile(calls, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, " kill ") {
				out = append(out, strings.TrimSpace(line))
			}
		}
		return out
	}
	// A background child with a command line of its own, to look for on
	// the host once the container is stopped.
	marker := fmt.Sprintf("%d", 4000+time.Now().UnixNano()%100000)
	leftChildren := func() []string { return processesWithArg(marker) }
	stop := func(id string, timeout int64) {
		t.Helper()
		if _, err := e.rt().StopContainer(e.ctx(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout}); err != nil {
			t.Fatalf("StopContainer %s: %v", id, err)
		}
	}

	pod := e.podConfig("stopsig")
	podID := e.runPod(pod)

	// The stop signal: the init traps it and exits 3.
	graceful := e.run(podID, pod, e.ctrConfig("graceful", "sh", "-c",
		"trap 'exit 3' TERM; sleep 3600 & wait"))
	e.waitState(graceful, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	// The trap is set once the shell runs its wait.
	eventually(t, 10*time.Second, "the graceful container's sleep", func() bool {
		return len(e.exec(graceful, "pidof", "sleep").Stdout) > 0
	})
	kills()
	stop(graceful, 30)
	if st := e.status(graceful); st.ExitCode != 3 {
		t.Errorf("graceful container's exit code %d, want 3 (its TERM trap)", st.ExitCode)
	}
	if k := kills(); len(k) != 0 {
		t.Errorf("the stop signal went through the runtime: %q", k)
	}

	// SIGKILL of a PID namespace's init takes the whole namespace.
	own := e.run(podID, pod, e.ctrConfig("own", "sh", "-c", "sleep "+marker+" & sleep 3600"))
	eventually(t, 10*time.Second, "the own-namespace container's child", func() bool { return len(leftChildren()) == 1 })
	kills()
	stop(own, 0)
	if st := e.status(own); st.ExitCode != 137 {
		t.Errorf("killed container's exit code %d, want 137", st.ExitCode)
	}
	if k := kills(); len(k) != 0 {
		t.Errorf("the kill of a container in its own PID namespace went through the runtime: %q", k)
	}
	eventually(t, 10*time.Second, "no process of the killed container", func() bool { return len(leftChildren()) == 0 })

	// In the pod's PID namespace the init is the pod's: the runtime kills
	// the container's processes by cgroup.
	shared := e.podConfig("stopsig-shared")
	shared.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_POD
	sharedID := e.runPod(shared)
	cfg := e.ctrConfig("shared", "sh", "-c", "sleep "+marker+" & sleep 3600")
	cfg.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_POD
	inPod := e.run(sharedID, shared, cfg)
	eventually(t, 10*time.Second, "the shared-namespace container's child", func() bool { return len(leftChildren()) == 1 })
	kills()
	stop(inPod, 0)
	if k := kills(); len(k) != 1 || !strings.Contains(k[0], "--all") {
		t.Errorf("runtime kill calls for a container in the pod's PID namespace: %q, want one with --all", k)
	}
	eventually(t, 10*time.Second, "no process of the killed shared-namespace container", func() bool { return len(leftChildren()) == 0 })
}

// processesWithArg lists the pids of the host's processes with arg among
// their arguments.
func processesWithArg(arg string) []string {
	entries, _ := os.ReadDir("/proc")
	var pids []string
	for _, ent := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, a := range bytes.Split(cmdline, []byte{0}) {
			if string(a) == arg {
				pids = append(pids, ent.Name())
				break
			}
		}
	}
	return pids
}

// TestStopFrozenContainer stops a container whose cgroup is frozen (as a
// checkpoint cut short by a crash may leave it): the monitor's SIGKILL
// waits on the frozen init, so after a moment the runtime's kill, which
// thaws the cgroup, must end it, and the stop succeeds.
func TestStopFrozenContainer(t *testing.T) {
	e := newEnv(t)
	pod := e.podConfig("frozen")
	podID := e.runPod(pod)
	marker := fmt.Sprintf("%d", 5000+time.Now().UnixNano()%100000)
	id := e.run(podID, pod, e.ctrConfig("c", "sleep", marker))
	var pids []string
	eventually(t, 10*time.Second, "the container's init on the host", func() bool {
		pids = processesWithArg(marker)
		return len(pids) == 1
	})
	cgroups, err := os.ReadFile(filepath.Join("/proc", pids[0], "cgroup"))
	if err != nil {
		t.Fatal(err)
	}
	var freeze, value string
	for _, line := range strings.Split(string(cgroups), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if testutil.Unified() && parts[0] == "0" {
			freeze, value = filepath.Join("/sys/fs/cgroup", parts[2], "cgroup.freeze"), "1"
		}
		if !testutil.Unified() && parts[1] == "freezer" {
			freeze, value = filepath.Join("/sys/fs/cgroup/freezer", parts[2], "freezer.state"), "FROZEN"
		}
	}
	if freeze == "" {
		t.Skipf("no freezer cgroup in %q", cgroups)
	}
	if err := os.WriteFile(freeze, []byte(value), 0o644); err != nil {
		t.Fatalf("freeze the container: %v", err)
	}
	if _, err := e.rt().StopContainer(e.ctx(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 0}); err != nil {
		t.Fatalf("StopContainer of a frozen container: %v", err)
	}
	if st := e.status(id); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 137 {
		t.Errorf("frozen container after stop: %s, exit code %d; want exited, 137", st.State, st.ExitCode)
	}
	eventually(t, 10*time.Second, "no process of the frozen container", func() bool { return len(processesWithArg(marker)) == 0 })
}
