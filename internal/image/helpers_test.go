package image

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func requiresRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("requires root")
	}
}

// tarLayer builds a gzip layer from path -> content (directories end in /).
func tarLayer(t *testing.T, files map[string]string) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range sortedKeys(files) {
		h := &tar.Header{Name: p, Mode: 0o644, Size: int64(len(files[p])), Typeflag: tar.TypeReg}
		if strings.HasSuffix(p, "/") {
			h = &tar.Header{Name: p, Mode: 0o755, Typeflag: tar.TypeDir}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(files[p])); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if keys[j] < keys[i] {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
	}
	return keys
}

// testImage builds a two-layer image for a platform; marker ends up in
// /etc/marker of the top layer so images differ.
func testImage(t *testing.T, arch, marker string) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image,
		tarLayer(t, map[string]string{"bin/": "", "bin/sh": "shell", "etc/": "", "etc/marker": "base"}),
		tarLayer(t, map[string]string{"etc/": "", "etc/marker": marker}),
	)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Config.Cmd = []string{"sh"}
	cf.Config.Env = []string{"PATH=/bin", "MARKER=" + marker}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func configDigest(t *testing.T, img v1.Image) string {
	t.Helper()
	h, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

func manifestDigest(t *testing.T, img interface{ Digest() (v1.Hash, error) }) string {
	t.Helper()
	h, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

// testRegistry is go-containerregistry's in-memory registry on loopback.
// wrap, when set, may intercept requests before the registry sees them.
type testRegistry struct {
	srv  *httptest.Server
	host string
	wrap func(w http.ResponseWriter, r *http.Request) bool
}

func newRegistry(t *testing.T) *testRegistry {
	t.Helper()
	tr := &testRegistry{}
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	tr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tr.wrap != nil && tr.wrap(w, r) {
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(tr.srv.Close)
	tr.host = strings.TrimPrefix(tr.srv.URL, "http://")
	return tr
}

func (r *testRegistry) push(t *testing.T, ref string, img v1.Image) {
	t.Helper()
	n, err := name.ParseReference(r.host + "/" + ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(n, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
}

func (r *testRegistry) pushIndex(t *testing.T, ref string, idx v1.ImageIndex) {
	t.Helper()
	n, err := name.ParseReference(r.host + "/" + ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(n, idx); err != nil {
		t.Fatalf("push index %s: %v", ref, err)
	}
}

func multiArch(t *testing.T, imgs map[string]v1.Image) v1.ImageIndex {
	t.Helper()
	var adds []mutate.IndexAddendum
	for _, arch := range []string{"amd64", "arm64"} {
		adds = append(adds, mutate.IndexAddendum{Add: imgs[arch], Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	return mutate.IndexMediaType(mutate.AppendManifests(empty.Index, adds...), types.OCIImageIndex)
}

func openStore(t *testing.T, root string, cfg Config) *Store {
	t.Helper()
	cfg.Root = root
	if cfg.Platform.OS == "" {
		cfg.Platform = v1.Platform{OS: "linux", Architecture: "amd64"}
	}
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// readTop reads a file through the image's layer stack the way overlayfs
// would for a plain file: the top-most layer that has it wins.
func readTop(t *testing.T, s *Store, img Image, p string) string {
	t.Helper()
	dirs, err := s.LowerDirs(img)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, p))
		if err == nil {
			return string(b)
		}
	}
	t.Fatalf("%s not in any layer of %s", p, img.ID)
	return ""
}

// dirNames lists a directory's entries (none when it does not exist).
func dirNames(t *testing.T, d string) []string {
	t.Helper()
	entries, err := os.ReadDir(d)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func countFiles(t *testing.T, d string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(d, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			n++
		}
		return nil
	})
	return n
}
