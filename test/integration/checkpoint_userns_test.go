package integration

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// TestCheckpointUserNamespace checkpoints a counter in a pod of its own
// user namespace (hostUsers: false): the archive is whole and the counter
// runs on. Its restore into another such pod is refused (see create.go:
// CRIU cannot restore into an existing user namespace).
func TestCheckpointUserNamespace(t *testing.T) {
	testutil.CriuDumps(t)
	e := checkpointEnv(t, testutil.CriuConfig())
	e.requireUserNamespaces()
	src := e.usernsPod("ckpt-userns-src", 33<<16)
	srcID := e.runPod(src)
	id := e.run(srcID, src, e.usernsCtr(src, "counter", counterCmd...))
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	eventually(t, 30*time.Second, "the counter to pass 20", func() bool { return e.counter(id) > 20 })
	loc := filepath.Join(t.TempDir(), "counter.tar")
	if _, err := e.rt().CheckpointContainer(e.ctx(), &runtimeapi.CheckpointContainerRequest{ContainerId: id, Location: loc}); err != nil {
		log := e.d.ReadLog()
		i := strings.Index(log, "CRIU dump failed")
		if i >= 0 {
			log = log[i:min(len(log), i+3000)]
		}
		t.Fatalf("CheckpointContainer of a user-namespaced container: %v\n%s", err, log)
	}
	checkpointctl(t, loc, "counter")
	if st := e.status(id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("container after its checkpoint: %s, want RUNNING", st.State)
	}
	first := e.counter(id)
	eventually(t, 10*time.Second, "the counter to go on after the checkpoint", func() bool { return e.counter(id) > first })
	noCheckpointLeftovers(t, e.d)

	// The restore into another user-namespaced pod: refused at creation,
	// nothing made. CRIU 4.1.1 clones the restored process into a new user
	// namespace (the checkpoint's), from which its setns into the pod's
	// network namespace, owned by the pod's user namespace, is EPERM.
	dst := e.usernsPod("ckpt-userns-dst", 34<<16)
	dstID := e.runPod(dst)
	cfg := e.usernsCtr(dst, "counter", counterCmd...)
	cfg.Image = &runtimeapi.ImageSpec{Image: loc}
	e.wantRestoreRefused(dstID, dst, cfg, codes.Unimplemented, "user namespace")
}
