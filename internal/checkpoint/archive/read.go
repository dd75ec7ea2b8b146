package archive

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/crib-dev/crib/internal/snapshot"
)

// The annotations that mark an OCI image made from a checkpoint archive
// (the archive's files as its one layer): checkpointctl's and buildah's
// name, and CRI-O's older one. Either names the checkpointed container.
const (
	ImageAnnotation     = "org.criu.checkpoint.container.name"
	CRIOImageAnnotation = "io.kubernetes.cri-o.annotations.checkpoint.name"
)

// IsImage reports whether an image with these manifest annotations and
// config labels is a checkpoint image (kaniko can set a label alone).
func IsImage(annotations, labels map[string]string) bool {
	for _, m := range []map[string]string{annotations, labels} {
		if _, ok := m[ImageAnnotation]; ok {
			return true
		}
		if _, ok := m[CRIOImageAnnotation]; ok {
			return true
		}
	}
	return false
}

// IsArchive reports whether image, a container's image as CRI names it,
// is a checkpoint archive to restore: an absolute path to a .tar file, as
// CRI-O takes one.
func IsArchive(image string) bool {
	if !filepath.IsAbs(image) || !strings.HasSuffix(image, ".tar") {
		return false
	}
	fi, err := os.Stat(image)
	return err == nil && fi.Mode().IsRegular()
}

// ReadConfig reads config.dump from the archive at p.
func ReadConfig(p string) (ContainerConfig, error) {
	var cfg ContainerConfig
	found := false
	err := walk(p, func(name string, hdr *tar.Header, r io.Reader) error {
		if name != ConfigDumpFile {
			return nil
		}
		found = true
		return json.NewDecoder(r).Decode(&cfg)
	})
	if err == nil && !found {
		err = fmt.Errorf("no %s in it", ConfigDumpFile)
	}
	if err != nil {
		return cfg, fmt.Errorf("checkpoint archive %s: %w", p, err)
	}
	return cfg, nil
}

// ReadSpec reads spec.dump, the checkpointed container's OCI spec, from
// the archive at p.
func ReadSpec(p string) (specs.Spec, error) {
	var spec specs.Spec
	found := false
	err := walk(p, func(name string, hdr *tar.Header, r io.Reader) error {
		if name != SpecDumpFile {
			return nil
		}
		found = true
		return json.NewDecoder(r).Decode(&spec)
	})
	if err == nil && !found {
		err = fmt.Errorf("no %s in it", SpecDumpFile)
	}
	if err != nil {
		return spec, fmt.Errorf("checkpoint archive %s: %w", p, err)
	}
	return spec, nil
}

// Unpack writes the archive's CRIU images into the directory images, and
// applies its writable layer to rootfs, the new container's mounted root:
// rootfs-diff.tar's files, through the extractor image layers go through
// (snapshot.Apply, within limits), then deleted.files removed. Every path
// stays inside its directory, and the files written hold no more bytes
// than the archive does. idmap, when set, maps the owners of the
// writable layer's files (a restore into another user namespace).
func Unpack(ctx context.Context, p, images, rootfs string, limits snapshot.Limits, idmap func(uid, gid int) (int, int)) error {
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("unpack checkpoint archive: %w", err)
	}
	// What a tar holds is no larger than the tar: a sparse entry declares
	// more. A directory's files are on disk already.
	budget := fi.Size()
	if fi.IsDir() {
		budget = math.MaxInt64
	}
	if err := os.MkdirAll(images, 0o700); err != nil {
		return err
	}
	imgRoot, err := os.OpenRoot(images)
	if err != nil {
		return err
	}
	defer imgRoot.Close()
	fsRoot, err := os.OpenRoot(rootfs)
	if err != nil {
		return err
	}
	defer fsRoot.Close()
	var deleted []string
	err = walk(p, func(name string, hdr *tar.Header, r io.Reader) error {
		switch {
		case strings.HasPrefix(name, CheckpointDirectory+"/"):
			rel := strings.TrimPrefix(name, CheckpointDirectory+"/")
			if hdr.Typeflag != tar.TypeReg || rel == "" || strings.Contains(rel, "/") {
				return nil // CRIU's images are a flat directory
			}
			if hdr.Size > budget {
				return fmt.Errorf("%s declares %d bytes, more than the archive holds: %w", name, hdr.Size, errdefs.ErrInvalidArgument)
			}
			budget -= hdr.Size
			return writeFile(imgRoot, rel, 0o600, r)
		case name == RootFsDiffTar:
			if hdr.Size > budget {
				return fmt.Errorf("%s declares %d bytes, more than the archive holds: %w", name, hdr.Size, errdefs.ErrInvalidArgument)
			}
			budget -= hdr.Size
			if err := snapshot.Apply(ctx, rootfs, r, hdr.Size, limits, idmap); err != nil {
				return fmt.Errorf("%s: %w", RootFsDiffTar, err)
			}
			return nil
		case name == DeletedFilesFile:
			return json.NewDecoder(r).Decode(&deleted)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("unpack checkpoint archive %s: %w", p, err)
	}
	for _, d := range deleted {
		rel := strings.TrimPrefix(path.Clean("/"+d), "/")
		if rel == "" {
			continue
		}
		if err := fsRoot.RemoveAll(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("unpack checkpoint archive %s: remove %s: %w", p, d, err)
		}
	}
	return nil
}

func walkDir(dir string, fn func(name string, hdr *tar.Header, r io.Reader) error) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		hdr := &tar.Header{Name: filepath.ToSlash(rel), Typeflag: tar.TypeReg, Size: fi.Size(), Mode: int64(fi.Mode().Perm())}
		return fn(filepath.ToSlash(rel), hdr, io.LimitReader(f, fi.Size()))
	})
}

func writeFile(root *os.Root, name string, mode fs.FileMode, r io.Reader) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// walk calls fn with each entry of the tar at p, its name cleaned; or,
// when p is a directory (a checkpoint image's layer, unpacked), with each
// regular file under it.
func walk(p string, fn func(name string, hdr *tar.Header, r io.Reader) error) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return walkDir(p, fn)
	}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		if err := fn(name, hdr, tr); err != nil {
			return err
		}
	}
}
