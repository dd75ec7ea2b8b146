package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// TestCheckpointRestoreEmptyDir checkpoints a counter that wrote into an
// emptyDir (a bind mount of a host directory, as the kubelet gives one)
// and restores it into a pod whose emptyDir holds other content: the
// restored container sees the volume's content, not what the checkpoint
// saw, and the archive's writable layer holds nothing of the volume.
func TestCheckpointRestoreEmptyDir(t *testing.T) {
	testutil.CriuRestores(t)
	e := checkpointEnv(t, testutil.CriuConfig())
	srcVol, dstVol := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dstVol, "f"), []byte("the volume's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := e.podConfig("ckpt-vol-src")
	srcID := e.runPod(src)
	cfg := e.ctrConfig("counter", counterCmd...)
	cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: srcVol}}
	id := e.run(srcID, src, cfg)
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	e.exec(id, "sh", "-c", "echo archived > /data/f && mkdir /data/d && echo x > /data/d/g")
	loc := filepath.Join(t.TempDir(), "counter.tar")
	if _, err := e.rt().CheckpointContainer(e.ctx(), &runtimeapi.CheckpointContainerRequest{ContainerId: id, Location: loc}); err != nil {
		t.Fatalf("CheckpointContainer: %v", err)
	}
	files, _ := archiveFiles(t, loc)
	_, diffNames := tarFiles(t, bytes.NewReader(files["rootfs-diff.tar"]))
	for _, n := range diffNames {
		if n == "data" || strings.HasPrefix(n, "data/") {
			t.Errorf("rootfs-diff.tar holds %s, of the emptyDir", n)
		}
	}

	dst := e.podConfig("ckpt-vol-dst")
	dstID := e.runPod(dst)
	rcfg := e.ctrConfig("counter", counterCmd...)
	rcfg.Image = &runtimeapi.ImageSpec{Image: loc}
	rcfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: dstVol}}
	restored := e.run(dstID, dst, rcfg)
	if st := e.status(restored); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("restored container: %s (%s: %s), want RUNNING\n%s", st.State, st.Reason, st.Message, e.d.ReadLog())
	}
	if out := e.exec(restored, "cat", "/data/f"); string(out.Stdout) != "the volume's\n" {
		t.Errorf("restored /data/f = %q, want the volume's content", out.Stdout)
	}
	if out := e.exec(restored, "ls", "/data/d"); out.ExitCode == 0 {
		t.Errorf("restored /data/d exists: the archive's, not the volume's")
	}
	if data, err := os.ReadFile(filepath.Join(srcVol, "f")); err != nil || string(data) != "archived\n" {
		t.Errorf("the source volume's f = %q, %v: changed by the restore", data, err)
	}
}
