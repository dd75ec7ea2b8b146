package image

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/klauspost/compress/gzip"
	"github.com/opencontainers/go-digest"
	imagespec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/crib-dev/crib/internal/snapshot"
)

// zerosLayer is a gzip layer of one file of size zero bytes: a blob some
// thousand times smaller than what it unpacks to.
func zerosLayer(t *testing.T, size int64) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: "zeros", Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(tw, zeroReader{}, size); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestPullRefusesExpandingLayer pulls images whose layer expands more than
// [layer_limits] allow: alone (unpacked as it downloads) and on top of two
// good layers (downloaded into content in the background, then unpacked).
// Each pull fails as resource exhausted naming the layer and the keys to
// change, and leaves no image, blob, snapshot or partial file.
func TestPullRefusesExpandingLayer(t *testing.T) {
	requiresRoot(t)
	bomb := zerosLayer(t, 64<<20)
	bombDigest, err := bomb.Digest()
	if err != nil {
		t.Fatal(err)
	}
	stacked, err := mutate.AppendLayers(testImage(t, "amd64", "base"), bomb)
	if err != nil {
		t.Fatal(err)
	}
	alone, err := mutate.AppendLayers(emptyAmd64(t), bomb)
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t)
	reg.push(t, "bomb/stacked:1", stacked)
	reg.push(t, "bomb/alone:1", alone)
	limits := snapshot.Limits{ExpansionRatio: 100, ExpansionFloor: 1 << 20}

	for _, repo := range []string{"bomb/stacked:1", "bomb/alone:1"} {
		t.Run(repo, func(t *testing.T) {
			root := t.TempDir()
			s := openStore(t, root, Config{LayerLimits: limits})
			_, err := s.Pull(context.Background(), reg.host+"/"+repo, Auth{})
			if !errdefs.IsResourceExhausted(err) {
				t.Fatalf("Pull error = %v, want resource exhausted", err)
			}
			t.Logf("refused: %v", err)
			for _, want := range []string{bombDigest.String(), "expansion_ratio"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
			if imgs := s.List(); len(imgs) != 0 {
				t.Errorf("images after the refused pull: %v", imgs)
			}
			for _, d := range []string{"blobs", "snapshots", "ingest", "images", "tmp"} {
				if n := countFiles(t, filepath.Join(root, d)); n != 0 {
					t.Errorf("%d files left in %s: %v", n, d, dirNames(t, filepath.Join(root, d)))
				}
			}
			if left := dirNames(t, filepath.Join(root, "snapshots")); len(left) != 0 {
				t.Errorf("snapshot dirs left: %v", left)
			}
			// The same store still pulls a sane image.
			reg.push(t, "bomb/sane:1", testImage(t, "amd64", "sane"))
			if _, err := s.Pull(context.Background(), reg.host+"/bomb/sane:1", Auth{}); err != nil {
				t.Fatalf("pull of a sane image after the refusal: %v", err)
			}
		})
	}
}

func emptyAmd64(t *testing.T) v1.Image {
	t.Helper()
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{OS: "linux", Architecture: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestPullRefusedLayerNotFetchedAgain pulls through a mirror that serves
// an expanding layer: the refusal ends the pull, and the host is not asked
// for the same layer.
func TestPullRefusedLayerNotFetchedAgain(t *testing.T) {
	requiresRoot(t)
	img, err := mutate.AppendLayers(emptyAmd64(t), zerosLayer(t, 64<<20))
	if err != nil {
		t.Fatal(err)
	}
	mirror, origin := newRegistry(t), newRegistry(t)
	mirror.push(t, "bomb/app:1", img)
	origin.push(t, "bomb/app:1", img)
	var asked atomic.Int32
	origin.wrap = func(http.ResponseWriter, *http.Request) bool {
		asked.Add(1)
		return false
	}
	s := openStore(t, t.TempDir(), Config{
		LayerLimits: snapshot.Limits{ExpansionRatio: 100, ExpansionFloor: 1 << 20},
		Registries:  map[string]Registry{origin.host: {Mirrors: []string{"http://" + mirror.host}}},
	})
	_, err = s.Pull(context.Background(), origin.host+"/bomb/app:1", Auth{})
	if !errdefs.IsResourceExhausted(err) || !strings.Contains(err.Error(), "expansion_ratio") {
		t.Fatalf("Pull error = %v, want resource exhausted naming expansion_ratio", err)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the host got %d requests after its mirror's layer was refused", n)
	}
}

// TestLoadRefusesExpandingLayer loads a docker archive whose layer expands
// past the limits: refused as a pull is, and nothing of it is kept.
func TestLoadRefusesExpandingLayer(t *testing.T) {
	requiresRoot(t)
	img, err := mutate.AppendLayers(testImage(t, "amd64", "base"), zerosLayer(t, 64<<20))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference("example.com/bomb:1")
	if err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if err := tarball.Write(ref, img, &archive); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	s := openStore(t, root, Config{LayerLimits: snapshot.Limits{ExpansionRatio: 100, ExpansionFloor: 1 << 20}})
	_, err = s.Load(context.Background(), &archive)
	if !errdefs.IsResourceExhausted(err) || !strings.Contains(err.Error(), "expansion_ratio") {
		t.Fatalf("Load error = %v, want resource exhausted naming expansion_ratio", err)
	}
	if imgs := s.List(); len(imgs) != 0 {
		t.Errorf("images after the refused load: %v", imgs)
	}
	for _, d := range []string{"blobs", "snapshots", "ingest", "images", "tmp"} {
		if n := countFiles(t, filepath.Join(root, d)); n != 0 {
			t.Errorf("%d files left in %s: %v", n, d, dirNames(t, filepath.Join(root, d)))
		}
	}
}

// TestCommitRefusesNegativeLayerSize stores nothing of an image whose
// manifest gives a layer a negative size.
func TestCommitRefusesNegativeLayerSize(t *testing.T) {
	root := t.TempDir()
	s := openStore(t, root, Config{})
	diffID := digest.FromString("layer")
	config := []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["` + diffID.String() + `"]}}`)
	spec := importSpec{
		names:        []string{"example.com/negative:1"},
		configDigest: digest.FromBytes(config),
		config:       config,
		layers: []layerSource{{
			desc: imagespec.Descriptor{MediaType: imagespec.MediaTypeImageLayerGzip, Digest: digest.FromString("blob"), Size: -1},
			open: func(context.Context) (io.ReadCloser, error) {
				t.Error("the layer was opened")
				return io.NopCloser(strings.NewReader("")), nil
			},
		}},
	}
	_, err := s.commit(context.Background(), spec)
	if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "size -1") {
		t.Fatalf("commit error = %v, want invalid argument naming the size", err)
	}
	if n := countFiles(t, filepath.Join(root, "blobs")); n != 0 {
		t.Errorf("%d blobs stored", n)
	}
}
