package testutil

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Untar extracts the directories and regular files of a tarball into dir,
// as `tar -x` would, with nothing synced; other entries are passed over. A
// name cannot leave dir: it is taken as a path below it.
func Untar(dir string, r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}

// UntarFile is Untar of the tarball at path.
func UntarFile(path, dir string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return Untar(dir, f)
}

// FetchAndUntar is the floor a pull is measured against: the image fetched
// with go-containerregistry's remote.Image and its layers untarred into
// dir one after another, in this process.
func FetchAndUntar(ref name.Reference, dir string) error {
	img, err := remote.Image(ref)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", ref, err)
	}
	layers, err := img.Layers()
	if err != nil {
		return fmt.Errorf("layers of %s: %w", ref, err)
	}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return fmt.Errorf("a layer of %s: %w", ref, err)
		}
		err = Untar(dir, rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("untar a layer of %s: %w", ref, err)
		}
	}
	return nil
}
