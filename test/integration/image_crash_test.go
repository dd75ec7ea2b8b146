package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// crashLayers and crashLayerBytes size the extra layers of the crash test
// image: random bytes, so gzip cannot shrink them.
const (
	crashLayers     = 3
	crashLayerBytes = 2 << 20
)

// heldRegistry is go-containerregistry's in-memory registry behind a
// handler that, while holding, sends only the first half of every layer
// blob and then stalls until the client goes away: a pull against it is
// stuck mid-download for as long as the test wants.
type heldRegistry struct {
	host    string
	layers  map[string][]byte // layer blob digest -> its bytes
	holding atomic.Bool
	// stalled is closed when the first held blob body has sent its half.
	stalled     chan struct{}
	stalledOnce sync.Once
}

func newHeldRegistry(t *testing.T) *heldRegistry {
	t.Helper()
	h := &heldRegistry{layers: map[string][]byte{}, stalled: make(chan struct{})}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.serveHeld(w, r) {
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	h.host = strings.TrimPrefix(srv.URL, "http://")
	return h
}

// serveHeld answers a GET of a layer blob while holding; it reports
// whether it did.
func (h *heldRegistry) serveHeld(w http.ResponseWriter, r *http.Request) bool {
	i := strings.LastIndex(r.URL.Path, "/blobs/")
	if r.Method != http.MethodGet || i < 0 || !h.holding.Load() {
		return false
	}
	d := r.URL.Path[i+len("/blobs/"):]
	b, ok := h.layers[d]
	if !ok {
		return false
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Header().Set("Docker-Content-Digest", d)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b[:len(b)/2])
	w.(http.Flusher).Flush()
	h.stalledOnce.Do(func() { close(h.stalled) })
	<-r.Context().Done()
	return true
}

// push stores img under repo:tag and remembers its layers' bytes.
func (h *heldRegistry) push(t *testing.T, repoTag string, img v1.Image) {
	t.Helper()
	ref, err := name.ParseReference(h.host+"/"+repoTag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		rc, err := l.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		h.layers[d.String()] = b
	}
}

// busyboxImage returns the busybox test image as a v1.Image, from its
// OCI layout tarball or from the loopback registry.
func busyboxImage(t *testing.T, ti testutil.TestImage) v1.Image {
	t.Helper()
	if ti.Tarball == "" {
		ref, err := name.ParseReference(strings.Replace(ti.Ref, "registry.k8s.io", "127.0.0.1:5000", 1), name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		img, err := remote.Image(ref)
		if err != nil {
			t.Fatalf("fetch busybox from the loopback registry: %v", err)
		}
		return img
	}
	dir := filepath.Join(t.TempDir(), "layout")
	if err := testutil.UntarFile(ti.Tarball, dir); err != nil {
		t.Fatal(err)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) == 0 {
		t.Fatalf("read busybox image index: %v (%d manifests)", err, len(im.Manifests))
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// randomFileLayer is a gzip layer holding one file of size random bytes
// at path.
func randomFileLayer(t *testing.T, path string, size int) v1.Layer {
	t.Helper()
	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	dir := filepath.Dir(path)
	if err := tw.WriteHeader(&tar.Header{Name: dir + "/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
		t.Fatal(err)
	}
	if err := tw.WriteHeader(&tar.Header{Name: path, Mode: 0o644, Size: int64(size), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
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

// storeDirs are the image store's directories under a daemon root (see
// internal/content and internal/snapshot).
type storeDirs struct{ root string }

func (s storeDirs) ingest() string    { return filepath.Join(s.root, "images", "ingest") }
func (s storeDirs) blobs() string     { return filepath.Join(s.root, "images", "blobs", "sha256") }
func (s storeDirs) snapshots() string { return filepath.Join(s.root, "images", "snapshots") }
func (s storeDirs) tmp() string       { return filepath.Join(s.root, "images", "tmp") }

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// partialIngests are the ingest files that hold some bytes.
func (s storeDirs) partialIngests(t *testing.T) []string {
	var out []string
	for _, n := range names(t, s.ingest()) {
		if fi, err := os.Stat(filepath.Join(s.ingest(), n)); err == nil && fi.Size() > 0 {
			out = append(out, n)
		}
	}
	return out
}

// halfSnapshots are snapshot directories being unpacked (tmp-*) or
// without their completion file.
func (s storeDirs) halfSnapshots(t *testing.T) []string {
	var out []string
	for _, n := range names(t, s.snapshots()) {
		if strings.HasPrefix(n, "tmp-") {
			out = append(out, n)
			continue
		}
		if _, err := os.Stat(filepath.Join(s.snapshots(), n, "committed")); err != nil {
			out = append(out, n)
		}
	}
	return out
}

// verifyBlobs checks that every stored blob holds the bytes its name
// promises, and returns how many there are.
func (s storeDirs) verifyBlobs(t *testing.T) int {
	t.Helper()
	blobs := names(t, s.blobs())
	for _, n := range blobs {
		f, err := os.Open(filepath.Join(s.blobs(), n))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != n {
			t.Errorf("blob %s holds bytes of digest %s", n, got)
		}
	}
	return len(blobs)
}

// TestImagePullKilledMidDownloadAndUnpack kills the daemon with SIGKILL
// while a pull is both downloading layer blobs and unpacking the first
// layer as it streams in, restarts it on the same root, and checks that
// the crash left nothing partial or orphaned behind, that the pull then
// completes, and that a container runs from the image.
func TestImagePullKilledMidDownloadAndUnpack(t *testing.T) {
	testutil.RequiresRoot(t)
	t.Parallel()
	reg := newHeldRegistry(t)
	img, err := mutate.AppendLayers(busyboxImage(t, testutil.Busybox(t)), crashLayersFor(t)...)
	if err != nil {
		t.Fatal(err)
	}
	reg.push(t, "crib/crash:1", img)
	reg.holding.Store(true)
	const ref = "crash.example/crib/crash:1"
	d := testutil.StartDaemon(t, testutil.Options{
		Registries: map[string][]string{"crash.example": {"http://" + reg.host}},
	})
	dirs := storeDirs{root: d.Root}

	pullErr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, err := d.Images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		pullErr <- err
	}()
	select {
	case <-reg.stalled:
	case err := <-pullErr:
		t.Fatalf("pull ended before any layer download stalled: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("no layer download started within a minute")
	}
	// The daemon writes what it received: wait until a partial blob and a
	// snapshot being unpacked are on disk, then kill it.
	eventually(t, 30*time.Second, "a partial ingest and a half-unpacked snapshot", func() bool {
		return len(dirs.partialIngests(t)) > 0 && len(dirs.halfSnapshots(t)) > 0
	})
	d.Kill9(t)
	if err := <-pullErr; err == nil {
		t.Fatal("the pull succeeded although the daemon was killed during it")
	}
	if len(dirs.partialIngests(t)) == 0 || len(dirs.halfSnapshots(t)) == 0 {
		t.Fatalf("the kill left no partial state to test against: ingest %v, snapshots %v",
			names(t, dirs.ingest()), names(t, dirs.snapshots()))
	}
	t.Logf("after SIGKILL: ingest %v; snapshots %v", names(t, dirs.ingest()), names(t, dirs.snapshots()))

	reg.holding.Store(false)
	d.Restart(t)
	if left := names(t, dirs.ingest()); len(left) != 0 {
		t.Errorf("partial ingests survive a restart: %v", left)
	}
	if left := dirs.halfSnapshots(t); len(left) != 0 {
		t.Errorf("half-unpacked snapshots survive a restart: %v", left)
	}
	if left := names(t, dirs.tmp()); len(left) != 0 {
		t.Errorf("temporary files survive a restart: %v", left)
	}
	// No record names the crashed pull, so what it completed before the
	// kill (config, manifest, finished layers and snapshots) is garbage.
	if left := names(t, dirs.blobs()); len(left) != 0 {
		t.Errorf("blobs of the crashed pull survive a restart: %v", left)
	}
	if left := names(t, dirs.snapshots()); len(left) != 0 {
		t.Errorf("snapshots of the crashed pull survive a restart: %v", left)
	}
	e := &env{t: t, d: d, img: testutil.TestImage{Ref: ref}}
	st, err := d.Images.ImageStatus(e.ctx(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		t.Fatal(err)
	}
	if st.GetImage() != nil {
		t.Fatalf("the crashed pull left an image: %v", st.GetImage())
	}

	pulled, err := d.Images.PullImage(e.ctx(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		t.Fatalf("pull after restart: %v", err)
	}
	st, err = d.Images.ImageStatus(e.ctx(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		t.Fatal(err)
	}
	if st.GetImage().GetId() != pulled.ImageRef {
		t.Fatalf("ImageStatus id %q, PullImage ref %q", st.GetImage().GetId(), pulled.ImageRef)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	// Layers, config and manifest, each verified against its name.
	if n := dirs.verifyBlobs(t); n != len(layers)+2 {
		t.Errorf("%d blobs after the pull, want %d: %v", n, len(layers)+2, names(t, dirs.blobs()))
	}
	if n, half := len(names(t, dirs.snapshots())), dirs.halfSnapshots(t); n != len(layers) || len(half) != 0 {
		t.Errorf("%d snapshots (incomplete: %v) after the pull, want %d complete", n, half, len(layers))
	}

	pod := e.podConfig("crash")
	podID := e.runPod(pod)
	ctr := e.run(podID, pod, e.ctrConfig("sizes", "sh", "-c", "wc -c /crash/*"))
	e.waitState(ctr, runtimeapi.ContainerState_CONTAINER_EXITED, 30*time.Second)
	out := waitLog(t, filepath.Join(pod.LogDirectory, "sizes.log"), "/crash/layer-"+strconv.Itoa(crashLayers-1), 10*time.Second)
	for i := 0; i < crashLayers; i++ {
		if want := fmt.Sprintf("%d /crash/layer-%d", crashLayerBytes, i); !strings.Contains(out, want) {
			t.Errorf("container output lacks %q:\n%s", want, out)
		}
	}
	if _, err := d.Runtime.StopPodSandbox(e.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Runtime.RemovePodSandbox(e.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Images.RemoveImage(e.ctx(), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		t.Fatal(err)
	}
	if left := append(names(t, dirs.blobs()), names(t, dirs.snapshots())...); len(left) != 0 {
		t.Errorf("blobs or snapshots left after removing the only image: %v", left)
	}
	if leaks := d.Leaks(); len(leaks) != 0 {
		t.Errorf("leaks after removing the pod: %v", leaks)
	}
}

// crashLayersFor builds the extra layers: /crash/layer-<i>, each of
// crashLayerBytes random bytes.
func crashLayersFor(t *testing.T) []v1.Layer {
	t.Helper()
	out := make([]v1.Layer, crashLayers)
	for i := range out {
		out[i] = randomFileLayer(t, fmt.Sprintf("crash/layer-%d", i), crashLayerBytes)
	}
	return out
}
