package integration

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// withStopSignal writes a docker-archive tarball of the test image (which
// must come from an OCI layout tarball) tagged ref, with STOPSIGNAL sig.
func withStopSignal(t *testing.T, ociTarball, ref, sig string) string {
	t.Helper()
	dir := t.TempDir()
	if err := untar(ociTarball, filepath.Join(dir, "layout")); err != nil {
		t.Fatal(err)
	}
	idx, err := layout.ImageIndexFromPath(filepath.Join(dir, "layout"))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) == 0 {
		t.Fatalf("read image index: %v (%d manifests)", err, len(im.Manifests))
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	c.StopSignal = sig
	img, err = mutate.Config(img, c)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "image.tar")
	if err := tarball.WriteToFile(out, tag, img); err != nil {
		t.Fatal(err)
	}
	return out
}

// untar extracts the regular files and directories of a tarball.
func untar(src, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if strings.Contains(h.Name, "..") {
			return errors.New("untar: entry " + h.Name + " leaves the directory")
		}
		p := filepath.Join(dst, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			out, err := os.Create(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}
