package integration

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/checkpoint/archive"
	"github.com/crib-dev/crib/internal/testutil"
)

// pushCheckpointImage makes an OCI image of the archive at p, as buildah
// does (`buildah add ctr archive.tar /`, the checkpoint annotation), its
// one layer the archive, and pushes it to the loopback registry under a
// repository of its own. It returns the reference through host, the name
// the daemon mirrors to the registry.
func pushCheckpointImage(t *testing.T, p, host, container string) string {
	t.Helper()
	testutil.RequireRegistry(t)
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return os.Open(p) })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.Annotations(img, map[string]string{archive.ImageAnnotation: container}).(v1.Image)
	repo := "crib-test/checkpoint-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	ref, err := name.ParseReference(strings.TrimPrefix(testutil.LoopbackRegistry, "http://")+"/"+repo+":1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("push the checkpoint image: %v", err)
	}
	return host + "/" + repo + ":1"
}

// TestCheckpointRestoreFromImage checkpoints a counter, makes an OCI image
// of the archive with checkpointctl's annotation, pushes it to the
// loopback registry, pulls it over the CRI and creates a container of it
// in a new pod: the counter is restored and counts on from where it was.
func TestCheckpointRestoreFromImage(t *testing.T) {
	testutil.CriuRestores(t)
	testutil.RequiresRoot(t)
	t.Parallel()
	img := testutil.Busybox(t)
	const host = "ckpt.test"
	d := testutil.StartDaemon(t, testutil.Options{
		Image:       &img,
		ExtraConfig: testutil.CriuConfig(),
		Registries:  map[string][]string{host: {testutil.LoopbackRegistry}},
	})
	e := &env{t: t, d: d, img: img}
	_, id := e.runChangedCounter("ckpt-img-src")
	eventually(t, 30*time.Second, "the counter to pass 20", func() bool { return e.counter(id) > 20 })
	loc := filepath.Join(t.TempDir(), "counter.tar")
	if _, err := e.rt().CheckpointContainer(e.ctx(), &runtimeapi.CheckpointContainerRequest{ContainerId: id, Location: loc}); err != nil {
		t.Fatalf("CheckpointContainer: %v", err)
	}
	ref := pushCheckpointImage(t, loc, host, "counter")
	if _, err := d.Images.PullImage(e.ctx(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		t.Fatalf("PullImage %s: %v", ref, err)
	}

	dst := e.podConfig("ckpt-img-dst")
	dstID := e.runPod(dst)
	cfg := e.ctrConfig("counter", counterCmd...)
	cfg.Image = &runtimeapi.ImageSpec{Image: ref}
	restored := e.run(dstID, dst, cfg)
	if st := e.status(restored); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("restored container: %s (%s: %s), want RUNNING\n%s", st.State, st.Reason, st.Message, e.d.ReadLog())
	}
	if got := e.counter(restored); got < 20 {
		t.Errorf("restored counter at %d, below the checkpoint's count past 20: started afresh, not restored", got)
	}
	if got := e.status(restored).Annotations; got["restored"] != "true" || got["checkpointImage"] != ref {
		t.Errorf("restored container's annotations = %v, want restored and checkpointImage %s", got, ref)
	}
	if out := e.exec(restored, "cat", "/written.txt"); string(out.Stdout) != "kept\n" {
		t.Errorf("restored /written.txt = %q, want \"kept\\n\"", out.Stdout)
	}
	if out := e.exec(restored, "ls", "/etc/group"); out.ExitCode == 0 {
		t.Errorf("restored /etc/group exists; the checkpointed container had deleted it")
	}
}
