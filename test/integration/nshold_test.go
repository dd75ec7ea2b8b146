package integration

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/nshold"
	"github.com/crib-dev/crib/internal/testutil"
)

// holderPid is the pid of the process holding the daemon's pods'
// namespaces, found through its socket.
func (e *env) holderPid() int {
	e.t.Helper()
	c, err := nshold.Dial(filepath.Join(e.d.State, "nshold.sock"))
	if err != nil {
		e.t.Fatalf("no namespace holder serves: %v", err)
	}
	defer c.Close()
	return c.Pid()
}

// killHolder kills the namespace holder and waits until it is gone.
func (e *env) killHolder() int {
	e.t.Helper()
	pid := e.holderPid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		e.t.Fatal(err)
	}
	eventually(e.t, testutil.Patience(10*time.Second), "the killed holder is gone", func() bool {
		return syscall.Kill(pid, 0) != nil
	})
	return pid
}

func (e *env) podState(id string) runtimeapi.PodSandboxState {
	e.t.Helper()
	st, err := e.rt().PodSandboxStatus(e.ctx(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		e.t.Fatal(err)
	}
	return st.GetStatus().GetState()
}

// TestPodsOutliveTheirNamespaceHolder: the process holding the pods'
// namespaces is killed, under a running daemon and then while none runs.
// A pod with a running container keeps its namespaces (they are pinned
// anew from the container): a container started in it afterwards joins
// them. A pod with nothing running lost them with the holder: it turns not
// ready, as a pod whose pause process died, for the kubelet to make anew,
// and its removal leaks nothing.
func TestPodsOutliveTheirNamespaceHolder(t *testing.T) {
	e := newEnv(t)
	runningPod := e.podConfig("held-running")
	running := e.runPod(runningPod)
	first := e.run(running, runningPod, e.ctrConfig("first", "sleep", "3600"))
	e.waitState(first, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	netns := e.execOut(first, "readlink", "/proc/self/ns/net")
	empty := e.runPod(e.podConfig("held-empty"))
	// Its namespace dies with the holder: its CNI DEL cannot find the
	// bridge plugin's masquerade rules (see RemoveMasqueradeRules).
	t.Cleanup(func() { testutil.RemoveMasqueradeRules(t, empty) })

	killed := e.killHolder()
	eventually(t, testutil.Patience(30*time.Second), "the pod with nothing running turns not ready", func() bool {
		return e.podState(empty) == runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	})
	if st := e.podState(running); st != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("the pod with a running container is %v after its holder was killed, want ready", st)
	}
	if pid := e.holderPid(); pid == killed {
		t.Errorf("the killed holder %d still serves", pid)
	}
	later := e.run(running, runningPod, e.ctrConfig("later", "sleep", "3600"))
	e.waitState(later, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	if got := e.execOut(later, "readlink", "/proc/self/ns/net"); got != netns {
		t.Errorf("a container started after the holder was killed is in network namespace %s, its pod's is %s", got, netns)
	}

	// The same while no daemon runs: the restarted daemon mends it.
	emptyAgain := e.runPod(e.podConfig("held-empty-again"))
	t.Cleanup(func() { testutil.RemoveMasqueradeRules(t, emptyAgain) })
	e.d.Kill9(t)
	e.killHolder()
	e.d.Restart(t)
	if st := e.podState(emptyAgain); st != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("a pod with nothing running is %v after its holder died with the daemon down, want not ready", st)
	}
	if st := e.podState(running); st != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("the pod with running containers is %v after a restart without its holder, want ready", st)
	}
	third := e.run(running, runningPod, e.ctrConfig("third", "sleep", "3600"))
	e.waitState(third, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	if got := e.execOut(third, "readlink", "/proc/self/ns/net"); got != netns {
		t.Errorf("a container started after the restart is in network namespace %s, its pod's is %s", got, netns)
	}
}
