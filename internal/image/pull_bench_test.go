package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/crib-dev/crib/internal/snapshot"

	"github.com/crib-dev/crib/internal/testutil"
)

const (
	benchLayers        = 3
	benchFilesPerLayer = 34
	benchFileSize      = 512 << 10 // 3 x 34 x 512 KiB = 51 MiB of file data
)

// benchLayer is a gzip layer of incompressible files, compressed once here
// so the registry serves the same bytes to every pull.
func benchLayer(b *testing.B, rng *rand.Rand, n int) v1.Layer {
	b.Helper()
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	dir := fmt.Sprintf("layer%d/", n)
	if err := tw.WriteHeader(&tar.Header{Name: dir, Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
		b.Fatal(err)
	}
	data := make([]byte, benchFileSize)
	for i := range benchFilesPerLayer {
		for j := 0; j+8 <= len(data); j += 8 {
			v := rng.Uint64()
			for k := range 8 {
				data[j+k] = byte(v >> (8 * k))
			}
		}
		h := &tar.Header{Name: fmt.Sprintf("%sf%02d", dir, i), Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(h); err != nil {
			b.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			b.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		b.Fatal(err)
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		b.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	blob := gz.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(blob)), nil })
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkPull measures pull+unpack of a 3-layer ~51 MiB image served by
// go-containerregistry's in-memory registry on loopback, into a fresh
// store each iteration, against a baseline of go-containerregistry's
// remote.Image with layers fetched one after another and untarred into a
// directory (what `crane pull` followed by tar extraction does, minus
// writing the tarball). It reports both throughputs and their ratio.
func BenchmarkPull(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("requires root")
	}
	rng := rand.New(rand.NewChaCha8([32]byte{1}))
	var layers []v1.Layer
	for i := range benchLayers {
		layers = append(layers, benchLayer(b, rng, i))
	}
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		b.Fatal(err)
	}
	reg := newBenchRegistry(b)
	ref := reg.host + "/bench/app:1"
	n, err := name.ParseReference(ref)
	if err != nil {
		b.Fatal(err)
	}
	if err := remote.Write(n, img); err != nil {
		b.Fatal(err)
	}
	mb := float64(benchLayers*benchFilesPerLayer*benchFileSize) / 1e6
	ctx := context.Background()
	var cribTime, baseTime time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Alternate the order so neither side always runs on a warm cache.
		runs := []func() time.Duration{
			func() time.Duration { return benchCrib(b, ctx, ref) },
			func() time.Duration { return benchBaseline(b, n) },
		}
		if i%2 == 1 {
			baseTime += runs[1]()
			cribTime += runs[0]()
		} else {
			cribTime += runs[0]()
			baseTime += runs[1]()
		}
	}
	b.StopTimer()
	cribRate := mb * float64(b.N) / cribTime.Seconds()
	baseRate := mb * float64(b.N) / baseTime.Seconds()
	b.ReportMetric(cribRate, "crib-MB/s")
	b.ReportMetric(baseRate, "baseline-MB/s")
	b.ReportMetric(cribRate/baseRate, "crib/baseline")
}

func benchCrib(b *testing.B, ctx context.Context, ref string) time.Duration {
	b.Helper()
	root, err := os.MkdirTemp("", "crib-bench-store-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(root)
	// The layer limits as the daemon's defaults set them: their checks
	// are part of what a pull costs.
	limits := snapshot.Limits{ExpansionRatio: 100, ExpansionFloor: 1 << 30, FreeSpaceReserve: 1 << 30, MaxEntries: 1_000_000}
	s, err := Open(ctx, Config{Root: root, LayerLimits: limits})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	if _, err := s.Pull(ctx, ref, Auth{}); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

func benchBaseline(b *testing.B, ref name.Reference) time.Duration {
	b.Helper()
	dir, err := os.MkdirTemp("", "crib-bench-baseline-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	if err := testutil.FetchAndUntar(ref, dir); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// newBenchRegistry is the in-memory registry on loopback, for benchmarks.
func newBenchRegistry(b *testing.B) *testRegistry {
	b.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	b.Cleanup(srv.Close)
	return &testRegistry{srv: srv, host: strings.TrimPrefix(srv.URL, "http://")}
}
