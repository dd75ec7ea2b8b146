package bench

import (
	"context"
	"fmt"
	"net"
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
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

const (
	pullLayers     = 3
	pullLayerBytes = 17 << 20
)

// pushRandomImage pushes a new image of random layers to the loopback
// registry under a registry.k8s.io name that crib and the baseline
// containerd both mirror there, and returns that name.
func pushRandomImage(b *testing.B, i int) string {
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
	return "registry.k8s.io/crib-bench/pull:" + tag
}

// BenchmarkPullImage measures PullImage over the CRI of a new 3-layer
// ~51 MiB image from the loopback registry, by crib and, in the same
// iteration, by the baseline containerd of ../shared/conformance (each
// pull is of an image neither has seen), and reports both throughputs and
// their ratio.
func BenchmarkPullImage(b *testing.B) {
	testutil.RequiresRoot(b)
	if conn, err := net.DialTimeout("tcp", "127.0.0.1:5000", time.Second); err != nil {
		b.Skip("the loopback registry is not up (../shared/conformance/images.sh)")
	} else {
		conn.Close()
	}
	d := testutil.StartDaemon(b, testutil.Options{
		LogLevel:   "warn",
		Registries: map[string][]string{"registry.k8s.io": {testutil.LoopbackRegistry}},
	})
	ctx := context.Background()
	var ctrd runtimeapi.ImageServiceClient
	if _, err := os.Stat(containerdEndpoint()); err == nil {
		conn, err := grpc.NewClient("unix://"+containerdEndpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		ctrd = runtimeapi.NewImageServiceClient(conn)
	} else {
		b.Logf("no baseline containerd at %s: crib only", containerdEndpoint())
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
	var cribTime, ctrdTime time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ref := pushRandomImage(b, i)
		settle(b)
		b.StartTimer()
		cribTime += pull(d.Images, ref)
		if ctrd != nil {
			settle(b)
			ctrdTime += pull(ctrd, ref)
		}
	}
	b.StopTimer()
	mb := float64(pullLayers*pullLayerBytes) / 1e6 * float64(b.N)
	b.ReportMetric(mb/cribTime.Seconds(), "crib-MB/s")
	if ctrd != nil {
		b.ReportMetric(mb/ctrdTime.Seconds(), "containerd-MB/s")
		b.ReportMetric(ctrdTime.Seconds()/cribTime.Seconds(), "crib/containerd")
	}
}
