package image

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	imagespec "github.com/opencontainers/image-spec/specs-go/v1"
)

// tarDir packs a directory tree into an in-memory tarball.
func tarDir(t *testing.T, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if d.Type().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestLoadOCILayout(t *testing.T) {
	requiresRoot(t)
	img := testImage(t, "amd64", "oci")
	imgs := map[string]v1.Image{"amd64": testImage(t, "amd64", "multi-amd"), "arm64": testImage(t, "arm64", "multi-arm")}
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{imagespec.AnnotationRefName: "docker.io/library/busybox:latest"})); err != nil {
		t.Fatal(err)
	}
	if err := p.AppendIndex(multiArch(t, imgs), layout.WithAnnotations(map[string]string{"io.containerd.image.name": "example.com/multi:2"})); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, t.TempDir(), Config{})
	got, err := s.Load(context.Background(), bytes.NewReader(tarDir(t, dir)))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("Load returned %d images, want 2", len(got))
	}
	type short struct {
		ID   string
		Tags []string
	}
	want := []short{
		{configDigest(t, img), []string{"docker.io/library/busybox:latest"}},
		{configDigest(t, imgs["amd64"]), []string{"example.com/multi:2"}},
	}
	var have []short
	for _, g := range got {
		have = append(have, short{g.ID, g.RepoTags})
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}
	bb, err := s.Resolve("busybox")
	if err != nil {
		t.Fatal(err)
	}
	if m := readTop(t, s, bb, "etc/marker"); m != "oci" {
		t.Errorf("etc/marker = %q", m)
	}
	if diff := cmp.Diff([]string{"sh"}, bb.Config.Config.Cmd); diff != "" {
		t.Errorf("Cmd (-want +got):\n%s", diff)
	}
}

func TestLoadDockerArchive(t *testing.T) {
	requiresRoot(t)
	a := testImage(t, "amd64", "docker-a")
	b := testImage(t, "amd64", "docker-b")
	refs := map[name.Reference]v1.Image{}
	for ref, img := range map[string]v1.Image{"busybox:1.36": a, "quay.io/foo/bar:v2": b, "busybox:latest": a} {
		r, err := name.ParseReference(ref)
		if err != nil {
			t.Fatal(err)
		}
		refs[r] = img
	}
	var buf bytes.Buffer
	if err := tarball.MultiRefWrite(refs, &buf); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, t.TempDir(), Config{})
	got, err := s.Load(context.Background(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("Load returned %d images, want 2", len(got))
	}
	ia, err := s.Resolve("busybox:1.36")
	if err != nil {
		t.Fatal(err)
	}
	if ia.ID != configDigest(t, a) {
		t.Errorf("busybox:1.36 = %s, want %s", ia.ID, configDigest(t, a))
	}
	if len(ia.RepoTags) != 2 {
		t.Errorf("RepoTags = %v, want two busybox tags", ia.RepoTags)
	}
	ib, err := s.Resolve("quay.io/foo/bar:v2")
	if err != nil {
		t.Fatal(err)
	}
	if m := readTop(t, s, ib, "etc/marker"); m != "docker-b" {
		t.Errorf("etc/marker = %q", m)
	}
	if m := readTop(t, s, ib, "bin/sh"); m != "shell" {
		t.Errorf("bin/sh = %q", m)
	}
}

func TestLoadRejectsGarbage(t *testing.T) {
	s := openStore(t, t.TempDir(), Config{})
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "hello.txt", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
	tw.Write([]byte("hi"))
	tw.Close()
	if _, err := s.Load(context.Background(), &buf); !errdefs.IsInvalidArgument(err) {
		t.Errorf("Load error = %v, want invalid argument", err)
	}
	var evil bytes.Buffer
	tw = tar.NewWriter(&evil)
	tw.WriteHeader(&tar.Header{Name: "../../escape", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
	tw.Write([]byte("hi"))
	tw.Close()
	if _, err := s.Load(context.Background(), &evil); !errdefs.IsInvalidArgument(err) {
		t.Errorf("Load error = %v, want invalid argument", err)
	}
}
