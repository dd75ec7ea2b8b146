package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

const (
	pullLayers     = 3
	pullLayerBytes = 17 << 20
)

// pushRandomImage pushes a new image of random layers to the loopback
// registry under a registry.k8s.io name that crib and the baseline
// containerd both mirror there, and returns that name and the name of the
// same image in the loopback registry itself.
func pushRandomImage(b *testing.B, i int) (mirrored string, direct name.Reference) {
	b.Helper()
	var layers []v1.Layer
	for l := 0; l < pullLayers; l++ {
		layer, err := random.Layer(pullLayerBytes, types.DockerLayer)
		if err != nil {
			b.Fatal(err)
		}
		layers = append(layers, layer)
	}
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		b.Fatal(err)
	}
	tag := fmt.Sprintf("pull-%d-%d", os.Getpid(), i)
	ref, err := name.ParseReference("127.0.0.1:5000/crib-bench/pull:"+tag, name.Insecure)
	if err != nil {
		b.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		b.Fatalf("push %s: %v", ref, err)
	}
	return "registry.k8s.io/crib-bench/pull:" + tag, ref
}

// BenchmarkPullImage measures PullImage over the CRI of a new 3-layer
// ~51 MiB image from the loopback registry by crib and, in the same
// iteration, by the baseline containerd of ../shared/conformance (each
// pull is of an image neither has seen), and the floor: the same image
// fetched in process by go-containerregistry's remote.Image, its layers
// one after another decompressed and untarred into a directory on the
// same file system as crib's store. It reports the three throughputs and
// crib's against each.
func BenchmarkPullImage(b *testing.B) {
	testutil.RequiresRoot(b)
	requireRegistry(b)
	d := testutil.StartDaemon(b, testutil.Options{
		LogLevel:   "warn",
		Registries: map[string][]string{"registry.k8s.io": {testutil.LoopbackRegistry}},
	})
	ctx := context.Background()
	var ctrd runtimeapi.ImageServiceClient
	if c := dialBaseline(b); c != nil {
		ctrd = c.Images
	}

	pull := func(images runtimeapi.ImageServiceClient, ref string) time.Duration {
		start := time.Now()
		if _, err := images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
			b.Fatalf("pull %s: %v", ref, err)
		}
		took := time.Since(start)
		b.StopTimer()
		if _, err := images.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		return took
	}
	var cribTime, ctrdTime, floorTime time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ref, direct := pushRandomImage(b, i)
		settle(b)
		b.StartTimer()
		cribTime += pull(d.Images, ref)
		if ctrd != nil {
			settle(b)
			ctrdTime += pull(ctrd, ref)
		}
		settle(b)
		floorTime += pullFloor(b, direct, d.Dir)
	}
	b.StopTimer()
	mb := float64(pullLayers*pullLayerBytes) / 1e6 * float64(b.N)
	b.ReportMetric(mb/cribTime.Seconds(), "crib-MB/s")
	b.ReportMetric(mb/floorTime.Seconds(), "floor-MB/s")
	b.ReportMetric(floorTime.Seconds()/cribTime.Seconds(), "crib/floor")
	if ctrd != nil {
		b.ReportMetric(mb/ctrdTime.Seconds(), "containerd-MB/s")
		b.ReportMetric(ctrdTime.Seconds()/cribTime.Seconds(), "crib/containerd")
	}
}

// pullFloor fetches ref with remote.Image and untars its layers, one after
// another, into a new directory under dir, and returns how long that took;
// the directory is removed untimed.
func pullFloor(b *testing.B, ref name.Reference, dir string) time.Duration {
	b.Helper()
	dst, err := os.MkdirTemp(dir, "pull-floor-")
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := testutil.FetchAndUntar(ref, dst); err != nil {
		b.Fatalf("floor: %v", err)
	}
	took := time.Since(start)
	b.StopTimer()
	if err := os.RemoveAll(dst); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	return took
}
