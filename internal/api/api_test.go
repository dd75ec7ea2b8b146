package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	imagespec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/crib-dev/crib/internal/image"
)

// fakeStore is an in-memory Images.
type fakeStore struct {
	mu       sync.Mutex
	images   map[string]image.Image // by tag and by id
	loaded   []byte
	loadErr  error
	pullErr  error
	pullAuth image.Auth
	removed  []string
	saved    string // format of the last save
	inFlight []image.PullStatus
}

func newFakeStore() *fakeStore {
	img := image.Image{
		ID:          "sha256:" + strings.Repeat("ab", 32),
		RepoTags:    []string{"docker.io/library/busybox:latest"},
		RepoDigests: []string{"docker.io/library/busybox@sha256:" + strings.Repeat("cd", 32)},
		Size:        1400000,
		Config:      imagespec.Image{Config: imagespec.ImageConfig{Cmd: []string{"sh"}}},
		ChainIDs:    []string{"sha256:" + strings.Repeat("ef", 32)},
		Pinned:      true,
	}
	return &fakeStore{images: map[string]image.Image{img.ID: img, img.RepoTags[0]: img, "busybox": img}}
}

func (f *fakeStore) Load(_ context.Context, r io.Reader) ([]image.Image, error) {
	f.loaded, _ = io.ReadAll(r)
	if f.loadErr != nil {
		return nil, f.loadErr
	}
	return []image.Image{{ID: "sha256:abc", RepoTags: []string{"docker.io/library/busybox:latest"}}}, nil
}

func (f *fakeStore) List() []image.Image {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[string]bool{}
	var out []image.Image
	for _, img := range f.images {
		if !seen[img.ID] {
			seen[img.ID] = true
			out = append(out, img)
		}
	}
	return out
}

func (f *fakeStore) Resolve(ref string) (image.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	img, ok := f.images[ref]
	if !ok {
		return image.Image{}, fmt.Errorf("image %q: %w", ref, errdefs.ErrNotFound)
	}
	return img, nil
}

func (f *fakeStore) Pull(_ context.Context, ref string, auth image.Auth, opts ...image.PullOption) (image.Image, error) {
	f.pullAuth = auth
	// Run the options through a real Pull's contract: the progress
	// callback gets partial then full reports of two layers.
	var o image.PullOptions
	for _, opt := range opts {
		opt(&o)
	}
	progress := o.Progress
	if progress != nil {
		for _, l := range []string{"sha256:l1", "sha256:l2"} {
			progress(image.Progress{Layer: l, Done: 0, Total: 10})
			progress(image.Progress{Layer: l, Done: 10, Total: 10})
			progress(image.Progress{Layer: l, Done: 10, Total: 10}) // a repeat is dropped
		}
	}
	if f.pullErr != nil {
		return image.Image{}, f.pullErr
	}
	return image.Image{ID: "sha256:pulled", RepoTags: []string{ref}}, nil
}

func (f *fakeStore) Remove(_ context.Context, ref string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = append(f.removed, ref)
	return nil
}

func (f *fakeStore) PruneImages(context.Context) (image.PruneReport, error) {
	return image.PruneReport{Images: []string{"sha256:gone"}, BytesFreed: 4096}, nil
}

func (f *fakeStore) Save(_ context.Context, ref, format string, w io.Writer) error {
	f.saved = format
	_, err := io.WriteString(w, "tar of "+ref)
	return err
}

func (f *fakeStore) Pulls() []image.PullStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inFlight
}

func serve(t *testing.T, s Images) string {
	t.Helper()
	socket := filepath.Join(t.TempDir(), SocketName)
	lis, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: Handler(s, slog.New(slog.NewTextHandler(io.Discard, nil)))}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })
	return socket
}

func TestLoadImages(t *testing.T) {
	f := newFakeStore()
	c := NewClient(serve(t, f))
	got, err := c.LoadImages(context.Background(), bytes.NewReader([]byte("tarball")))
	if err != nil {
		t.Fatal(err)
	}
	want := []LoadedImage{{ID: "sha256:abc", RepoTags: []string{"docker.io/library/busybox:latest"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadImages (-want +got):\n%s", diff)
	}
	if string(f.loaded) != "tarball" {
		t.Errorf("daemon got %q", f.loaded)
	}
}

func TestLoadImagesError(t *testing.T) {
	f := newFakeStore()
	f.loadErr = fmt.Errorf("entry escapes the root: %w", errdefs.ErrInvalidArgument)
	_, err := NewClient(serve(t, f)).LoadImages(context.Background(), bytes.NewReader(nil))
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusBadRequest || !strings.Contains(err.Error(), "escapes the root") {
		t.Fatalf("LoadImages = %v, want the daemon's error with status 400", err)
	}
}

func TestNoDaemon(t *testing.T) {
	c := NewClient(filepath.Join(t.TempDir(), "missing.sock"))
	if _, err := c.LoadImages(context.Background(), bytes.NewReader(nil)); !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("LoadImages without a daemon = %v, want ErrNoDaemon", err)
	}
	if _, err := c.ListImages(context.Background()); !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("ListImages without a daemon = %v, want ErrNoDaemon", err)
	}
}

func TestListAndInspect(t *testing.T) {
	f := newFakeStore()
	c := NewClient(serve(t, f))
	ctx := context.Background()
	list, err := c.ListImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	img := f.images["busybox"]
	want := ImageInfo{ID: img.ID, Tags: img.RepoTags, Digests: img.RepoDigests, Size: img.Size, Pinned: true}
	if diff := cmp.Diff([]ImageInfo{want}, list); diff != "" {
		t.Errorf("ListImages (-want +got):\n%s", diff)
	}
	// A reference with slashes and a colon travels as one path segment.
	got, err := c.InspectImage(ctx, "docker.io/library/busybox:latest")
	if err != nil {
		t.Fatal(err)
	}
	want.Config = &img.Config
	want.ChainIDs = img.ChainIDs
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("InspectImage (-want +got):\n%s", diff)
	}
	_, err = c.InspectImage(ctx, "nginx")
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusNotFound {
		t.Errorf("InspectImage(missing) = %v, want status 404", err)
	}
}

func TestUnescapedReference(t *testing.T) {
	f := newFakeStore()
	socket := serve(t, f)
	c := NewClient(socket)
	for _, tt := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/v1/images/docker.io/library/busybox:latest", http.StatusOK},
		{http.MethodGet, "/v1/images/docker.io%2Flibrary%2Fbusybox:latest", http.StatusOK},
		{http.MethodGet, "/v1/images/docker.io/library/nginx:latest", http.StatusNotFound},
		{http.MethodDelete, "/v1/images/registry.k8s.io/pause:3.10", http.StatusNoContent},
	} {
		req, err := http.NewRequest(tt.method, "http://crib"+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s %s = %d, want %d", tt.method, tt.path, resp.StatusCode, tt.want)
		}
	}
	if diff := cmp.Diff([]string{"registry.k8s.io/pause:3.10"}, f.removed); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
}

func TestRemovePruneSave(t *testing.T) {
	f := newFakeStore()
	c := NewClient(serve(t, f))
	ctx := context.Background()
	for _, ref := range []string{"registry.k8s.io/pause:3.10", "sha256:" + strings.Repeat("ab", 32)} {
		if err := c.RemoveImage(ctx, ref); err != nil {
			t.Fatalf("RemoveImage(%s): %v", ref, err)
		}
	}
	if diff := cmp.Diff([]string{"registry.k8s.io/pause:3.10", "sha256:" + strings.Repeat("ab", 32)}, f.removed); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	pr, err := c.PruneImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(PruneResult{Removed: []string{"sha256:gone"}, BytesFreed: 4096}, pr); diff != "" {
		t.Errorf("PruneImages (-want +got):\n%s", diff)
	}
	tests := []struct {
		ref, format string
		wantErr     int
	}{
		{ref: "docker.io/library/busybox:latest", format: "docker"},
		{ref: "busybox", format: "oci"},
		{ref: "busybox", format: "zip", wantErr: http.StatusBadRequest},
		{ref: "nginx", format: "oci", wantErr: http.StatusNotFound},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		err := c.SaveImage(ctx, tt.ref, tt.format, &buf)
		if tt.wantErr != 0 {
			var se *StatusError
			if !errors.As(err, &se) || se.Code != tt.wantErr {
				t.Errorf("SaveImage(%s, %s) = %v, want status %d", tt.ref, tt.format, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("SaveImage(%s, %s): %v", tt.ref, tt.format, err)
		}
		if buf.String() != "tar of "+tt.ref || f.saved != tt.format {
			t.Errorf("SaveImage(%s, %s) wrote %q as %q", tt.ref, tt.format, buf.String(), f.saved)
		}
	}
}

func TestPull(t *testing.T) {
	f := newFakeStore()
	c := NewClient(serve(t, f))
	var events []PullEvent
	auth := &image.Auth{Username: "u", Password: "p"}
	id, err := c.PullImage(context.Background(), "busybox", auth, func(e PullEvent) { events = append(events, e) })
	if err != nil {
		t.Fatal(err)
	}
	if id != "sha256:pulled" {
		t.Errorf("PullImage = %q, want sha256:pulled", id)
	}
	if f.pullAuth != *auth {
		t.Errorf("store got auth %+v, want %+v", f.pullAuth, *auth)
	}
	want := []PullEvent{
		{Layer: "sha256:l1", Total: 10}, {Layer: "sha256:l1", Done: 10, Total: 10},
		{Layer: "sha256:l2", Total: 10}, {Layer: "sha256:l2", Done: 10, Total: 10},
	}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}

	f.pullErr = fmt.Errorf("pull image x: unauthorized")
	if _, err := c.PullImage(context.Background(), "x", nil, nil); err == nil || err.Error() != "pull image x: unauthorized" {
		t.Errorf("PullImage failing = %v, want the store's error", err)
	}
	_, err = c.PullImage(context.Background(), "", nil, nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusBadRequest {
		t.Errorf("PullImage(\"\") = %v, want status 400", err)
	}
}

func TestListPulls(t *testing.T) {
	f := newFakeStore()
	c := NewClient(serve(t, f))
	got, err := c.ListPulls(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || len(got) != 0 {
		t.Errorf("no pull in flight listed as %#v, want an empty list", got)
	}

	started := time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)
	f.mu.Lock()
	f.inFlight = []image.PullStatus{
		{Ref: "docker.io/library/nginx:1.27", Started: started, Waiters: 2, Layers: []image.Progress{
			{Layer: "sha256:l1", Done: 100, Total: 100},
			{Layer: "sha256:l2", Done: 25, Total: 300},
		}},
		{Ref: "registry.k8s.io/pause:3.10", Started: started.Add(time.Second), Waiters: 1},
	}
	f.mu.Unlock()
	got, err = c.ListPulls(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []PullInfo{
		{Ref: "docker.io/library/nginx:1.27", Started: started, Waiters: 2, Done: 125, Total: 400, Layers: []LayerProgress{
			{Digest: "sha256:l1", Done: 100, Total: 100},
			{Digest: "sha256:l2", Done: 25, Total: 300},
		}},
		{Ref: "registry.k8s.io/pause:3.10", Started: started.Add(time.Second), Waiters: 1, Layers: []LayerProgress{}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pulls (-want +got):\n%s", diff)
	}
}
