package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestDaemonRestartKeepsContainers(t *testing.T) {
	e := newEnv(t)
	pod := e.podConfig("survivor")
	podID := e.runPod(pod)

	// counter prints every 100 ms and ends by itself after 10 s with exit
	// code 5; waiter exits with 4 once the test creates a file in a host
	// directory mounted into it.
	counter := e.run(podID, pod, e.ctrConfig("counter", "sh", "-c",
		`i=0; while [ $i -lt 100 ]; do echo count $i; i=$((i+1)); sleep 0.1; done; exit 5`))
	signal := t.TempDir()
	waiterCfg := e.ctrConfig("waiter", "sh", "-c",
		`echo waiting; while [ ! -e /signal/go ]; do sleep 0.1; done; echo bye; exit 4`)
	waiterCfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/signal", HostPath: signal}}
	waiter := e.run(podID, pod, waiterCfg)
	// late is created before the restarts and started after them.
	late := e.create(podID, pod, e.ctrConfig("late", "sh", "-c", "echo late start; sleep 3600"))
	counterLog := e.waitState(counter, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second).LogPath
	waiterLog := e.waitState(waiter, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second).LogPath
	waitLog(t, counterLog, "count 3\n", 10*time.Second)
	waitLog(t, waiterLog, "waiting\n", 10*time.Second)

	e.d.Kill9(t)

	// While the daemon is down the container keeps running and its monitor
	// keeps writing the log.
	before := fileSize(counterLog)
	eventually(t, 5*time.Second, "the counter's log to grow while the daemon is down", func() bool {
		return fileSize(counterLog) > before
	})
	// The waiter exits while the daemon is down.
	if err := os.WriteFile(filepath.Join(signal, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitLog(t, waiterLog, "bye\n", 10*time.Second)

	e.d.Restart(t)

	st := e.status(counter)
	if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("counter after restart: %s (reason %q, message %q), want RUNNING", st.State, st.Reason, st.Message)
	}
	if pod, err := e.rt().PodSandboxStatus(e.ctx(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: podID}); err != nil ||
		pod.Status.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("pod after restart: %v, %v; want READY", pod.GetStatus().GetState(), err)
	}
	if out := e.exec(counter, "echo", "adopted"); string(out.Stdout) != "adopted\n" {
		t.Errorf("ExecSync after restart = %q", out.Stdout)
	}

	// A graceful restart keeps them too.
	e.d.Restart(t)
	if st := e.status(counter); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("counter after a graceful restart: %s (reason %q, message %q), want RUNNING", st.State, st.Reason, st.Message)
	}
	if st := e.status(late); st.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Errorf("created container after restarts: %s (reason %q, message %q), want CREATED", st.State, st.Reason, st.Message)
	}
	e.start(late)
	lateLog := e.waitState(late, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second).LogPath
	waitLog(t, lateLog, "late start\n", 10*time.Second)

	ws := e.waitState(waiter, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	if ws.ExitCode != 4 || ws.Reason != "Error" {
		t.Errorf("waiter: exit code %d reason %q, want 4 Error", ws.ExitCode, ws.Reason)
	}
	cs := e.waitState(counter, runtimeapi.ContainerState_CONTAINER_EXITED, 30*time.Second)
	if cs.ExitCode != 5 || cs.FinishedAt <= cs.StartedAt {
		t.Errorf("counter: exit code %d, started %d finished %d; want 5 and finished after started", cs.ExitCode, cs.StartedAt, cs.FinishedAt)
	}
	data, _ := os.ReadFile(counterLog)
	lines := joinStreams(parseCRILog(t, string(data)))["stdout"]
	for i, l := range lines {
		if want := "count " + strconv.Itoa(i); l != want {
			t.Fatalf("counter line %d = %q, want %q (lines lost or repeated across the restart)", i, l, want)
		}
	}
	if len(lines) != 100 {
		t.Errorf("counter printed %d lines, want 100: last %q", len(lines), strings.Join(lines[max(0, len(lines)-3):], " | "))
	}
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}
