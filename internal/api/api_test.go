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
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"

	"github.com/crib-dev/crib/internal/image"
)

type fakeLoader struct {
	got []byte
	err error
}

func (f *fakeLoader) Load(_ context.Context, r io.Reader) ([]image.Image, error) {
	f.got, _ = io.ReadAll(r)
	if f.err != nil {
		return nil, f.err
	}
	return []image.Image{{ID: "sha256:abc", RepoTags: []string{"docker.io/library/busybox:latest"}}}, nil
}

func serve(t *testing.T, l Loader) string {
	t.Helper()
	socket := filepath.Join(t.TempDir(), SocketName)
	lis, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: Handler(l, slog.New(slog.NewTextHandler(io.Discard, nil)))}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })
	return socket
}

func TestLoadImages(t *testing.T) {
	f := &fakeLoader{}
	c := NewClient(serve(t, f))
	got, err := c.LoadImages(context.Background(), bytes.NewReader([]byte("tarball")))
	if err != nil {
		t.Fatal(err)
	}
	want := []LoadedImage{{ID: "sha256:abc", RepoTags: []string{"docker.io/library/busybox:latest"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadImages (-want +got):\n%s", diff)
	}
	if string(f.got) != "tarball" {
		t.Errorf("daemon got %q", f.got)
	}
}

func TestLoadImagesError(t *testing.T) {
	f := &fakeLoader{err: fmt.Errorf("entry escapes the root: %w", errdefs.ErrInvalidArgument)}
	_, err := NewClient(serve(t, f)).LoadImages(context.Background(), bytes.NewReader(nil))
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("escapes the root")) {
		t.Fatalf("LoadImages = %v, want the daemon's error", err)
	}
}

func TestNoDaemon(t *testing.T) {
	c := NewClient(filepath.Join(t.TempDir(), "missing.sock"))
	if _, err := c.LoadImages(context.Background(), bytes.NewReader(nil)); !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("LoadImages without a daemon = %v, want ErrNoDaemon", err)
	}
}
