package integration

import (
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestRestartDuringStartWaitsForIt kills the daemon while the OCI runtime
// is still making a container that StartContainer handed to its monitor.
// The restarted daemon must not report the container running before the
// runtime made it: it waits for the start's outcome, and then the
// container runs and answers an exec.
func TestRestartDuringStartWaitsForIt(t *testing.T) {
	e := newEnv(t)
	// A runc that takes 3 s before it runs a container.
	e.wrapRunc("slow-runc", `case " $* " in *" run "*) sleep 3 ;; esac`)

	pod := e.podConfig("slowstart")
	podID := e.runPod(pod)
	id := e.create(podID, pod, e.ctrConfig("c", "sleep", "3600"))
	started := make(chan error, 1)
	go func() {
		_, err := e.rt().StartContainer(e.ctx(), &runtimeapi.StartContainerRequest{ContainerId: id})
		started <- err
	}()
	// The monitor took the container once its socket is there; runc is
	// then asleep.
	eventually(t, 10*time.Second, "the monitor to take the container", func() bool {
		matches, _ := filepath.Glob(filepath.Join(e.d.State, "containers", id[:16]+"*.sock"))
		return len(matches) > 0
	})
	e.d.Kill9(t)
	if err := <-started; err == nil {
		t.Fatal("StartContainer returned before the daemon was killed; the runtime was not slow enough")
	}
	e.d.Restart(t)

	if st := e.status(id); st.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
		if res := e.exec(id, "echo", "alive"); string(res.Stdout) != "alive\n" {
			t.Errorf("container reported running after the restart, but exec says %q %q (exit %d)", res.Stdout, res.Stderr, res.ExitCode)
		}
	} else {
		t.Errorf("container after the restart: %v, want it running (its start finished meanwhile)", st.State)
	}
}
