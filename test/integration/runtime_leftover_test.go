package integration

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/mount"
	"github.com/crib-dev/crib/internal/testutil"
)

// TestRemoveUnmountsRuntimeLeftovers: a runc killed while it had a copy of
// itself bind-mounted in the container's runtime state directory (runc
// does that for CVE-2019-5736) leaves the mount there; removing the
// container must take it away with the directory.
func TestRemoveUnmountsRuntimeLeftovers(t *testing.T) {
	e := newEnv(t)
	pod := e.podConfig("leftover")
	podID := e.runPod(pod)
	id := e.run(podID, pod, e.ctrConfig("c", "sleep", "3600"))
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)

	handler, _ := testutil.DefaultRuntime()
	stateDir := filepath.Join(e.d.State, "runtime", handler, id)
	if _, err := os.Stat(stateDir); err != nil {
		t.Fatalf("the runtime's state directory of the container: %v", err)
	}
	leftover := filepath.Join(stateDir, "runc.leftover")
	if err := os.WriteFile(leftover, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := mount.Bind("/proc/self/exe", leftover); err != nil {
		t.Fatalf("bind-mount a leftover: %v", err)
	}
	t.Cleanup(func() { _ = mount.UnmountUnder(stateDir) })

	if _, err := e.rt().StopContainer(e.ctx(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 1}); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	if _, err := e.rt().RemoveContainer(e.ctx(), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatalf("RemoveContainer: %v", err)
	}
	if points, err := mount.Under(stateDir); err != nil || len(points) != 0 {
		t.Errorf("mounts left under the runtime's state directory: %v (%v)", points, err)
	}
	if _, err := os.Stat(stateDir); !os.IsNotExist(err) {
		t.Errorf("the runtime's state directory is still there: %v", err)
	}
}
