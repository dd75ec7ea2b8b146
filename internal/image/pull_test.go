package image

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/crib-dev/crib/internal/snapshot"
)

func TestPullByTagAndDigest(t *testing.T) {
	requiresRoot(t)
	reg := newRegistry(t)
	img := testImage(t, "amd64", "v1")
	reg.push(t, "test/app:1.0", img)
	root := t.TempDir()
	s := openStore(t, root, Config{})
	ctx := context.Background()

	got, err := s.Pull(ctx, reg.host+"/test/app:1.0", Auth{})
	if err != nil {
		t.Fatal(err)
	}
	mdig := manifestDigest(t, img)
	want := Image{
		ID:          configDigest(t, img),
		RepoTags:    []string{reg.host + "/test/app:1.0"},
		RepoDigests: []string{reg.host + "/test/app@" + mdig},
	}
	opts := cmp.FilterPath(func(p cmp.Path) bool {
		f := p.Last().String()
		return f == ".Config" || f == ".ChainIDs" || f == ".Size"
	}, cmp.Ignore())
	if diff := cmp.Diff(want, got, opts); diff != "" {
		t.Errorf("Pull (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"sh"}, got.Config.Config.Cmd); diff != "" {
		t.Errorf("Cmd (-want +got):\n%s", diff)
	}
	if len(got.ChainIDs) != 2 || got.Size <= 0 {
		t.Errorf("ChainIDs = %v, Size = %d", got.ChainIDs, got.Size)
	}
	if m := readTop(t, s, got, "etc/marker"); m != "v1" {
		t.Errorf("etc/marker = %q, want top layer's v1", m)
	}
	dirs, err := s.LowerDirs(got)
	if err != nil {
		t.Fatal(err)
	}
	wantDirs := []string{
		filepath.Join(root, "snapshots", strings.TrimPrefix(got.ChainIDs[1], "sha256:"), "fs"),
		filepath.Join(root, "snapshots", strings.TrimPrefix(got.ChainIDs[0], "sha256:"), "fs"),
	}
	if diff := cmp.Diff(wantDirs, dirs); diff != "" {
		t.Errorf("LowerDirs (-want +got):\n%s", diff)
	}

	byDigest, err := s.Pull(ctx, reg.host+"/test/app@"+mdig, Auth{})
	if err != nil {
		t.Fatal(err)
	}
	if byDigest.ID != got.ID {
		t.Errorf("pull by digest gave %s, want %s", byDigest.ID, got.ID)
	}
	if len(s.List()) != 1 {
		t.Errorf("List has %d images, want 1", len(s.List()))
	}
	if n := len(dirNames(t, filepath.Join(root, "snapshots"))); n != 2 {
		t.Errorf("%d snapshots, want 2 (layers unpacked once)", n)
	}
}

func TestPullMultiArchIndex(t *testing.T) {
	requiresRoot(t)
	reg := newRegistry(t)
	imgs := map[string]v1.Image{"amd64": testImage(t, "amd64", "amd"), "arm64": testImage(t, "arm64", "arm")}
	idx := multiArch(t, imgs)
	reg.pushIndex(t, "multi/app:latest", idx)
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			s := openStore(t, t.TempDir(), Config{Platform: v1.Platform{OS: "linux", Architecture: arch}})
			got, err := s.Pull(context.Background(), reg.host+"/multi/app", Auth{})
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != configDigest(t, imgs[arch]) {
				t.Errorf("ID = %s, want the %s image %s", got.ID, arch, configDigest(t, imgs[arch]))
			}
			wantDigest := reg.host + "/multi/app@" + manifestDigest(t, idx)
			if diff := cmp.Diff([]string{wantDigest}, got.RepoDigests); diff != "" {
				t.Errorf("RepoDigests (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("no match", func(t *testing.T) {
		s := openStore(t, t.TempDir(), Config{Platform: v1.Platform{OS: "linux", Architecture: "s390x"}})
		_, err := s.Pull(context.Background(), reg.host+"/multi/app", Auth{})
		if !errdefs.IsNotFound(err) {
			t.Errorf("Pull error = %v, want not found", err)
		}
	})
}

func TestPullThroughMirror(t *testing.T) {
	requiresRoot(t)
	empty := newRegistry(t)
	mirror := newRegistry(t)
	img := testImage(t, "amd64", "pause")
	mirror.push(t, "pause:3.10", img)
	s := openStore(t, t.TempDir(), Config{Registries: map[string]Registry{
		"registry.k8s.io": {Mirrors: []string{"http://" + empty.host, "http://" + mirror.host}},
	}})
	got, err := s.Pull(context.Background(), "registry.k8s.io/pause:3.10", Auth{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != configDigest(t, img) {
		t.Errorf("ID = %s, want %s", got.ID, configDigest(t, img))
	}
	if diff := cmp.Diff([]string{"registry.k8s.io/pause:3.10"}, got.RepoTags); diff != "" {
		t.Errorf("RepoTags (-want +got):\n%s", diff)
	}
	if _, err := s.Resolve("registry.k8s.io/pause:3.10"); err != nil {
		t.Errorf("Resolve: %v", err)
	}
}

func TestPullErrorClasses(t *testing.T) {
	reg := newRegistry(t)
	reg.push(t, "exists:1", testImage(t, "amd64", "x"))
	closed := newRegistry(t)
	closed.srv.Close()
	denied := newRegistry(t)
	denied.wrap = func(w http.ResponseWriter, r *http.Request) bool {
		if strings.Contains(r.URL.Path, "/manifests/") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]}`)
			return true
		}
		return false
	}
	tests := []struct {
		name  string
		ref   string
		class error
		msg   string
	}{
		{"missing tag", reg.host + "/exists:2", errdefs.ErrNotFound, "MANIFEST_UNKNOWN"},
		{"missing repo", reg.host + "/nothere:1", errdefs.ErrNotFound, "NAME_UNKNOWN"},
		{"unreachable", closed.host + "/x:1", errdefs.ErrUnavailable, "connect"},
		{"denied", denied.host + "/x:1", errdefs.ErrPermissionDenied, "requested access to the resource is denied"},
		{"bad reference", "UPPER/Case::x", errdefs.ErrInvalidArgument, "parse image reference"},
	}
	s := openStore(t, t.TempDir(), Config{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Pull(context.Background(), tc.ref, Auth{})
			if !errors.Is(err, tc.class) {
				t.Fatalf("Pull error = %v, want class %v", err, tc.class)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Pull error %q does not contain %q", err, tc.msg)
			}
		})
	}
}

func TestPullCorruptLayerRefused(t *testing.T) {
	requiresRoot(t)
	reg := newRegistry(t)
	img := testImage(t, "amd64", "corrupt")
	reg.push(t, "bad/app:1", img)
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	top, err := layers[1].Digest()
	if err != nil {
		t.Fatal(err)
	}
	var hits int
	var mu sync.Mutex
	reg.wrap = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+top.String()) {
			return false
		}
		mu.Lock()
		hits++
		mu.Unlock()
		rc, err := layers[1].Compressed()
		if err != nil {
			t.Error(err)
			return false
		}
		defer rc.Close()
		b, _ := io.ReadAll(rc)
		b[len(b)/2] ^= 0xff // same length, different bytes
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Write(b)
		return true
	}
	root := t.TempDir()
	s := openStore(t, root, Config{})
	_, err = s.Pull(context.Background(), reg.host+"/bad/app:1", Auth{})
	if !errdefs.IsInvalidArgument(err) {
		t.Fatalf("Pull error = %v, want invalid argument", err)
	}
	if !strings.Contains(err.Error(), top.String()) {
		t.Errorf("error %q does not name the layer digest", err)
	}
	if hits == 0 {
		t.Fatal("corrupting handler never ran")
	}
	if n := countFiles(t, filepath.Join(root, "blobs")); n != 0 {
		t.Errorf("%d blobs left after refused pull", n)
	}
	for _, d := range []string{"snapshots", "ingest", "images"} {
		if left := dirNames(t, filepath.Join(root, d)); len(left) != 0 {
			t.Errorf("%s not empty after refused pull: %v", d, left)
		}
	}
	if len(s.List()) != 0 {
		t.Errorf("List = %v, want empty", s.List())
	}
}

func TestConcurrentPullsSameRef(t *testing.T) {
	requiresRoot(t)
	reg := newRegistry(t)
	img := testImage(t, "amd64", "conc")
	reg.push(t, "conc/app:1", img)
	s := openStore(t, t.TempDir(), Config{})
	var wg sync.WaitGroup
	results := make([]Image, 3)
	errs := make([]error, 3)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = s.Pull(context.Background(), reg.host+"/conc/app:1", Auth{})
		}()
	}
	wg.Wait()
	for i := range results {
		if errs[i] != nil {
			t.Fatalf("pull %d: %v", i, errs[i])
		}
		if results[i].ID != configDigest(t, img) {
			t.Errorf("pull %d gave %s", i, results[i].ID)
		}
	}
	if m := readTop(t, s, results[0], "etc/marker"); m != "conc" {
		t.Errorf("etc/marker = %q", m)
	}
}

func TestPullMaxLayerSize(t *testing.T) {
	requiresRoot(t)
	reg := newRegistry(t)
	reg.push(t, "big/app:1", testImage(t, "amd64", "big"))
	root := t.TempDir()
	s := openStore(t, root, Config{LayerLimits: snapshot.Limits{MaxSize: 100}})
	_, err := s.Pull(context.Background(), reg.host+"/big/app:1", Auth{})
	if !errdefs.IsResourceExhausted(err) {
		t.Fatalf("Pull error = %v, want resource exhausted", err)
	}
	if n := countFiles(t, filepath.Join(root, "blobs")); n != 0 {
		t.Errorf("%d blobs left after refused pull", n)
	}
	if left := dirNames(t, filepath.Join(root, "snapshots")); len(left) != 0 {
		t.Errorf("snapshots left after refused pull: %v", left)
	}
}

func TestPullFallsBackFromDeadMirrorToHost(t *testing.T) {
	requiresRoot(t)
	reg := newRegistry(t)
	img := testImage(t, "amd64", "fallback")
	reg.push(t, "fb/app:1", img)
	dead := newRegistry(t)
	dead.srv.Close()
	s := openStore(t, t.TempDir(), Config{Registries: map[string]Registry{
		reg.host: {Mirrors: []string{"http://" + dead.host}},
	}})
	got, err := s.Pull(context.Background(), reg.host+"/fb/app:1", Auth{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != configDigest(t, img) {
		t.Errorf("ID = %s, want %s", got.ID, configDigest(t, img))
	}
	// When everything fails, the error is the host's, with the mirrors'.
	_, err = s.Pull(context.Background(), reg.host+"/fb/app:missing", Auth{})
	if !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), "mirrors:") {
		t.Errorf("Pull error = %v, want the host's not found plus mirror errors", err)
	}
}
