package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// waitTrap is a container script that installs trap, says ready, and idles
// in short sleeps so that the trap runs promptly.
func waitTrap(trap string) []string {
	return []string{"sh", "-c", trap + "; echo ready; while true; do sleep 0.1; done"}
}

func TestStopContainerSignals(t *testing.T) {
	e := newEnv(t)
	pod := e.podConfig("stopper")
	podID := e.runPod(pod)

	// stopAfterReady starts a container, waits for its trap to be set,
	// stops it and returns how long Stop took and the final status.
	stopAfterReady := func(t *testing.T, cfg *runtimeapi.ContainerConfig, timeout int64) (time.Duration, *runtimeapi.ContainerStatus) {
		t.Helper()
		id := e.run(podID, pod, cfg)
		st := e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
		waitLog(t, st.LogPath, "ready\n", 10*time.Second)
		start := time.Now()
		if _, err := e.rt().StopContainer(e.ctx(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout}); err != nil {
			t.Fatalf("StopContainer: %v", err)
		}
		elapsed := time.Since(start)
		return elapsed, e.status(id)
	}

	t.Run("ignored SIGTERM is killed after the timeout", func(t *testing.T) {
		elapsed, st := stopAfterReady(t, e.ctrConfig("stubborn", waitTrap(`trap "" TERM`)...), 2)
		if elapsed < 2*time.Second {
			t.Errorf("StopContainer returned after %s, before its 2 s timeout", elapsed)
		}
		if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 137 {
			t.Errorf("after stop: %s exit code %d, want EXITED 137 (SIGKILL)", st.State, st.ExitCode)
		}
	})

	t.Run("CRI stop_signal", func(t *testing.T) {
		cfg := e.ctrConfig("usr1", waitTrap(`trap "exit 42" USR1`)...)
		cfg.StopSignal = runtimeapi.Signal_SIGNAL_SIGUSR1
		elapsed, st := stopAfterReady(t, cfg, 30)
		if st.ExitCode != 42 {
			t.Errorf("exit code %d, want 42 from the USR1 trap (took %s)", st.ExitCode, elapsed)
		}
		if st.StopSignal != runtimeapi.Signal_SIGNAL_SIGUSR1 {
			t.Errorf("status stop_signal = %s, want SIGUSR1", st.StopSignal)
		}
	})

	t.Run("image STOPSIGNAL", func(t *testing.T) {
		if e.img.Tarball == "" {
			t.Skip("the test image is not a tarball that can be rewritten")
		}
		const ref = "docker.io/library/busybox-stopsignal:latest"
		e.d.LoadImage(t, withStopSignal(t, e.img.Tarball, ref, "SIGUSR1"))
		cfg := e.ctrConfig("imgsig", waitTrap(`trap "exit 43" USR1`)...)
		cfg.Image.Image = ref
		elapsed, st := stopAfterReady(t, cfg, 30)
		if st.ExitCode != 43 {
			t.Errorf("exit code %d, want 43 from the USR1 trap (took %s)", st.ExitCode, elapsed)
		}
	})
}

// TestStopReleasesRuntime: a stopped container, by StopContainer or by
// StopPodSandbox, holds no mount and no runtime state any more (as
// containerd's exited tasks), yet is listed EXITED with its exit code until
// removed; a second stop and the removal succeed and leave nothing.
func TestStopReleasesRuntime(t *testing.T) {
	e := newEnv(t)
	pod := e.podConfig("releaser")
	podID := e.runPod(pod)
	ids := []string{
		e.run(podID, pod, e.ctrConfig("first", "sleep", "3600")),
		e.run(podID, pod, e.ctrConfig("second", "sleep", "3600")),
	}
	holds := func(id string) []string {
		t.Helper()
		var held []string
		for _, m := range e.cribMounts() {
			if strings.Contains(m, id) {
				held = append(held, m)
			}
		}
		if _, err := os.Stat(filepath.Join(e.d.State, "runtime", "runc", id)); err == nil {
			held = append(held, "runtime state of "+id)
		}
		return held
	}
	for _, id := range ids {
		e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
		if len(holds(id)) == 0 {
			t.Fatalf("running container %s: no rootfs mount or runtime state found (does the test look in the right place?)", id)
		}
	}
	if _, err := e.rt().StopContainer(e.ctx(), &runtimeapi.StopContainerRequest{ContainerId: ids[0]}); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	if _, err := e.rt().StopPodSandbox(e.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatalf("StopPodSandbox: %v", err)
	}
	for _, id := range ids {
		if held := holds(id); len(held) > 0 {
			t.Errorf("stopped container %s still holds:\n%s", id, strings.Join(held, "\n"))
		}
		if st := e.status(id); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 137 {
			t.Errorf("stopped container %s: %s exit code %d, want EXITED 137", id, st.State, st.ExitCode)
		}
		if _, err := e.rt().StopContainer(e.ctx(), &runtimeapi.StopContainerRequest{ContainerId: id}); err != nil {
			t.Errorf("second StopContainer of %s: %v", id, err)
		}
	}
	if _, err := e.rt().RemovePodSandbox(e.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatalf("RemovePodSandbox: %v", err)
	}
	e.noLeaks(t)
}
