package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/api"
	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/testutil"
)

// slowRegistry serves the first half of every layer blob at once and the
// rest only once release is closed.
func slowRegistry(t *testing.T, layers map[string]bool, release <-chan struct{}) string {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := strings.LastIndex(r.URL.Path, "/blobs/")
		if r.Method != http.MethodGet || i < 0 || !layers[r.URL.Path[i+len("/blobs/"):]] {
			reg.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		reg.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		w.Header().Set("Content-Length", rec.Header().Get("Content-Length"))
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		select {
		case <-release:
			_, _ = w.Write(body[len(body)/2:])
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestCribPullProgress follows a pull the image store does (as the CRI's
// PullImage would) through the local API to the percent the agent shows.
func TestCribPullProgress(t *testing.T) {
	testutil.RequiresRoot(t)
	img, err := random.Image(100_000, 2)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	layers := map[string]bool{}
	var total, half int64
	for _, l := range m.Layers {
		layers[l.Digest.String()] = true
		total += l.Size
		half += l.Size / 2
	}
	release := make(chan struct{})
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	host := slowRegistry(t, layers, release)
	t.Cleanup(open) // before the registry closes, so that it can
	ref := host + "/slow/app:1"
	n, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(n, img); err != nil {
		t.Fatal(err)
	}

	store, err := image.Open(context.Background(), image.Config{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	socket := filepath.Join(t.TempDir(), api.SocketName)
	lis, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api.Handler(store, slog.New(slog.DiscardHandler))}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })
	p := cribPullProgress{client: api.NewClient(socket)}

	if _, _, ok := p.PullProgress(ref); ok {
		t.Fatal("progress of a pull not begun")
	}
	pulled := make(chan error, 1)
	go func() {
		_, err := store.Pull(context.Background(), ref, image.Auth{})
		pulled <- err
	}()
	var done, gotTotal int64
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		done, gotTotal, ok = p.PullProgress(ref)
		if ok && done >= half {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("progress %d/%d (known %v), want %d/%d", done, gotTotal, ok, half, total)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if gotTotal != total || done != half {
		t.Errorf("progress %d/%d while the registry holds half of every layer, want %d/%d", done, gotTotal, half, total)
	}
	open()
	if err := <-pulled; err != nil {
		t.Fatal(err)
	}
	if done, total, ok := p.PullProgress(ref); ok {
		t.Errorf("progress %d/%d of a pull that ended", done, total)
	}
}

// TestImagePullsShowsCRIPull: a pull the kubelet starts over the CRI shows
// in `crib image pulls` while it is in flight, and leaves it when done.
func TestImagePullsShowsCRIPull(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{LogLevel: "info"})
	img, err := random.Image(100_000, 2)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	layers := map[string]bool{}
	var total, half int64
	for _, l := range m.Layers {
		layers[l.Digest.String()] = true
		total += l.Size
		half += l.Size / 2
	}
	release := make(chan struct{})
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	host := slowRegistry(t, layers, release)
	t.Cleanup(open)
	ref := host + "/slow/cri:1"
	n, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(n, img); err != nil {
		t.Fatal(err)
	}

	pulled := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, err := d.Images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		pulled <- err
	}()
	// IMAGE PROGRESS BYTES LAYERS WAITERS, then the age.
	want := fmt.Sprintf("%s %d%% %s/%s 0/2 1 ", ref, half*100/total, humanSize(half), humanSize(total))
	var out string
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
		if time.Now().After(deadline) {
			t.Fatalf("crib image pulls shows\n%s\nwithout %q", out, want)
		}
		time.Sleep(50 * time.Millisecond)
		out = cribImage(t, d, "pulls")
	}
	out = cribImage(t, d, "pulls", "--layers")
	for _, l := range m.Layers {
		row := strings.Join([]string{shortDigest(l.Digest.String()), percent(l.Size/2, l.Size), byteRatio(l.Size/2, l.Size)}, " ")
		found := false
		for _, line := range strings.Split(out, "\n") {
			found = found || strings.Join(strings.Fields(line), " ") == row
		}
		if !found {
			t.Errorf("crib image pulls --layers shows\n%s\nwithout the half-done layer %q", out, row)
		}
	}
	open()
	if err := <-pulled; err != nil {
		t.Fatal(err)
	}
	if out := cribImage(t, d, "pulls"); strings.Contains(out, ref) {
		t.Errorf("crib image pulls still shows the finished pull:\n%s", out)
	}
}
