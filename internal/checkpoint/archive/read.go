package archive

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

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

// Unpack writes the archive's CRIU images into the directory images, and
// applies its writable layer to rootfs, the new container's mounted root:
// rootfs-diff.tar's files, then deleted.files removed. Every path stays
// inside its directory (os.Root).
func Unpack(p, images, rootfs string) error {
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
			return writeFile(imgRoot, rel, 0o600, r)
		case name == RootFsDiffTar:
			return applyDiff(fsRoot, r)
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

// applyDiff unpacks the writable layer's tar into root.
func applyDiff(root *os.Root, r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", RootFsDiffTar, err)
		}
		name := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		if name == "" {
			continue
		}
		mode := fs.FileMode(hdr.Mode).Perm()
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, mode); err != nil {
				return err
			}
			if err := root.Chmod(name, mode); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
				return err
			}
			_ = root.Remove(name)
			if err := writeFile(root, name, mode, tr); err != nil {
				return err
			}
		case tar.TypeSymlink:
			_ = root.Remove(name)
			if err := root.Symlink(hdr.Linkname, name); err != nil {
				return err
			}
		case tar.TypeLink:
			_ = root.Remove(name)
			if err := root.Link(strings.TrimPrefix(path.Clean("/"+hdr.Linkname), "/"), name); err != nil {
				return err
			}
		default:
			continue // devices and fifos: not made by a restore
		}
		if err := root.Lchown(name, hdr.Uid, hdr.Gid); err != nil {
			return err
		}
	}
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

// walk calls fn with each entry of the tar at p, its name cleaned.
func walk(p string, fn func(name string, hdr *tar.Header, r io.Reader) error) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
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
