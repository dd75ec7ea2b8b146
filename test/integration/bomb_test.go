package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// The gzip bomb: one tar entry of 20 GiB of zeros, gzipped to ~20 MiB.
const (
	bombSize  = 20 << 30
	bombChunk = 64 << 20 // zeros per gzip member
	// bombCache names the cached copy; change it when the layer changes.
	bombCache = "gzip-bomb-20g-v1"
)

// TestPullGzipBombRefused pulls, over the CRI and with the default
// configuration, an image whose single layer is 20 GiB of zeros gzipped
// to ~20 MiB (what containerd unpacks). The pull must fail as resource
// exhausted, naming the layer and the key to change, and leave no image,
// blob, snapshot or partial file.
func TestPullGzipBombRefused(t *testing.T) {
	testutil.RequiresRoot(t)
	if testing.Short() {
		// The pull path does not depend on the cgroup driver or the init
		// system; under emulation (the VM suite runs -short) making the
		// bomb alone takes minutes. The host's run checks it.
		t.Skip("-short: the gzip bomb is pulled in the host's run")
	}
	t.Parallel()
	layer := gzipBomb(t)
	digest, err := layer.Digest()
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{OS: "linux", Architecture: runtime.GOARCH})
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	ref, err := name.ParseReference(host+"/crib/bomb:20g", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("push the bomb: %v", err)
	}

	d := testutil.StartDaemon(t, testutil.Options{
		Registries: map[string][]string{"bomb.example": {srv.URL}},
	})
	const bombRef = "bomb.example/crib/bomb:20g"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err = d.Images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: bombRef}})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("PullImage of the bomb: %v, want code ResourceExhausted", err)
	}
	t.Logf("refused: %v", err)
	for _, want := range []string{digest.String(), "expansion_ratio"} {
		if !strings.Contains(status.Convert(err).Message(), want) {
			t.Errorf("the error does not name %s", want)
		}
	}

	st, err := d.Images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: bombRef}})
	if err != nil {
		t.Fatal(err)
	}
	if st.GetImage() != nil {
		t.Errorf("the refused pull left an image: %v", st.GetImage())
	}
	list, err := d.Images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Images) != 0 {
		t.Errorf("images after the refused pull: %v", list.Images)
	}
	dirs := storeDirs{root: d.Root}
	for what, dir := range map[string]string{
		"blobs": dirs.blobs(), "snapshots": dirs.snapshots(), "ingest": dirs.ingest(), "tmp": dirs.tmp(),
	} {
		if left := names(t, dir); len(left) != 0 {
			t.Errorf("%s left after the refused pull: %v", what, left)
		}
	}
}

// gzipBomb returns the bomb layer, made once and cached: making it hashes
// 20 GiB of zeros (its diff ID), some seconds of CPU. Every 64 MiB of
// zeros is one gzip member compressed once at best compression and
// repeated: a gzip file may hold a series of members, read as one stream
// (RFC 1952; Go's readers and containerd's alike), so the blob is what
// streaming the zeros through gzip gives, at a fraction of the cost.
func gzipBomb(t *testing.T) v1.Layer {
	t.Helper()
	dir := filepath.Join(t.TempDir(), bombCache)
	if cache, err := os.UserCacheDir(); err == nil {
		dir = filepath.Join(cache, "crib-test", bombCache)
	}
	blob := filepath.Join(dir, "layer.tar.gz")
	if l, err := cachedBomb(blob); err == nil {
		return l
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := writeBomb(blob); err != nil {
		t.Fatal(err)
	}
	l, err := cachedBomb(blob)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("made the gzip bomb in %s: %s", time.Since(start).Round(time.Second), blob)
	return l
}

// writeBomb writes the blob and, last, its diff ID beside it (the mark
// that the cached copy is whole).
func writeBomb(blob string) error {
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	if err := tw.WriteHeader(&tar.Header{Name: "zeros", Mode: 0o644, Size: bombSize, Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	// The tar: this header, the zeros, two zero blocks that end the archive.
	zeros := make([]byte, bombChunk)
	end := zeros[:2*512]
	head, err := gzipMember(hdr.Bytes())
	if err != nil {
		return err
	}
	chunk, err := gzipMember(zeros)
	if err != nil {
		return err
	}
	tail, err := gzipMember(end)
	if err != nil {
		return err
	}
	var gz bytes.Buffer
	diff := sha256.New()
	gz.Write(head)
	diff.Write(hdr.Bytes())
	for range bombSize / bombChunk {
		gz.Write(chunk)
		diff.Write(zeros)
	}
	gz.Write(tail)
	diff.Write(end)
	tmp := blob + ".tmp"
	if err := os.WriteFile(tmp, gz.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, blob); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.WriteFile(blob+".diffid", []byte("sha256:"+hex.EncodeToString(diff.Sum(nil))), 0o644)
}

// gzipMember is b gzipped at best compression.
func gzipMember(b []byte) ([]byte, error) {
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// cachedBomb opens a blob writeBomb finished.
func cachedBomb(blob string) (v1.Layer, error) {
	id, err := os.ReadFile(blob + ".diffid")
	if err != nil {
		return nil, err
	}
	diffID, err := v1.NewHash(string(id))
	if err != nil {
		return nil, err
	}
	f, err := os.Open(blob)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, size, err := v1.SHA256(f)
	if err != nil {
		return nil, err
	}
	return partial.CompressedToLayer(&fileLayer{path: blob, digest: d, diffID: diffID, size: size})
}

// fileLayer is a gzip layer blob in a file whose digests are known, so
// that nothing decompresses it to learn its diff ID.
type fileLayer struct {
	path           string
	digest, diffID v1.Hash
	size           int64
}

func (l *fileLayer) Digest() (v1.Hash, error)            { return l.digest, nil }
func (l *fileLayer) DiffID() (v1.Hash, error)            { return l.diffID, nil }
func (l *fileLayer) Size() (int64, error)                { return l.size, nil }
func (l *fileLayer) MediaType() (types.MediaType, error) { return types.OCILayer, nil }
func (l *fileLayer) Compressed() (io.ReadCloser, error)  { return os.Open(l.path) }
