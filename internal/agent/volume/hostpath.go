package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"
)

// prepareHostPath checks the host path against the volume's type the way
// the kubelet does and returns the path itself. The *OrCreate types create
// what is missing (a directory with its parents, mode 0755; an empty file,
// mode 0644, whose parent must exist, as in the kubelet). Like the kubelet
// it follows symlinks when it checks the type. A missing path is
// ErrNotFound, a path of the wrong type ErrInvalidArgument.
func prepareHostPath(name string, src *corev1.HostPathVolumeSource) (string, error) {
	path := src.Path
	if !filepath.IsAbs(path) || hasBackstep(path) {
		return "", fmt.Errorf("volume %q: hostPath %q must be absolute and without \"..\": %w", name, path, errdefs.ErrInvalidArgument)
	}
	var typ corev1.HostPathType
	if src.Type != nil {
		typ = *src.Type
	}
	if err := checkHostPath(path, typ); err != nil {
		return "", fmt.Errorf("volume %q: hostPath %s of type %s: %w", name, path, typeName(typ), err)
	}
	return path, nil
}

func typeName(t corev1.HostPathType) string {
	if t == corev1.HostPathUnset {
		return `""`
	}
	return string(t)
}

// hasBackstep reports whether p has a ".." element.
func hasBackstep(p string) bool {
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return true
		}
	}
	return false
}

// checkHostPath applies one hostPath type.
func checkHostPath(path string, typ corev1.HostPathType) error {
	switch typ {
	case corev1.HostPathUnset:
		return nil
	case corev1.HostPathDirectoryOrCreate:
		if err := createDir(path); err != nil {
			return err
		}
		return expectType(path, fs.ModeDir, "a directory")
	case corev1.HostPathDirectory:
		return expectType(path, fs.ModeDir, "a directory")
	case corev1.HostPathFileOrCreate:
		if err := createFile(path); err != nil {
			return err
		}
		return expectType(path, 0, "a regular file")
	case corev1.HostPathFile:
		return expectType(path, 0, "a regular file")
	case corev1.HostPathSocket:
		return expectType(path, fs.ModeSocket, "a socket")
	case corev1.HostPathCharDev:
		return expectType(path, fs.ModeDevice|fs.ModeCharDevice, "a character device")
	case corev1.HostPathBlockDev:
		return expectType(path, fs.ModeDevice, "a block device")
	default:
		return fmt.Errorf("unknown hostPath type: %w", errdefs.ErrInvalidArgument)
	}
}

// expectType checks that path (symlinks followed) exists and has the file
// type bits want.
func expectType(path string, want fs.FileMode, what string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("does not exist: %w", errdefs.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	if got := fi.Mode().Type(); got != want {
		return fmt.Errorf("is not %s but %s: %w", what, describe(got), errdefs.ErrInvalidArgument)
	}
	return nil
}

func describe(t fs.FileMode) string {
	switch t {
	case 0:
		return "a regular file"
	case fs.ModeDir:
		return "a directory"
	case fs.ModeSocket:
		return "a socket"
	case fs.ModeDevice | fs.ModeCharDevice:
		return "a character device"
	case fs.ModeDevice:
		return "a block device"
	case fs.ModeNamedPipe:
		return "a named pipe"
	case fs.ModeSymlink:
		return "a symlink"
	}
	return "of type " + t.String()
}

// createDir creates path with its parents, mode 0755, unless something
// exists there already.
func createDir(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return fmt.Errorf("create directory: %w", err)
	}
	if err := os.Chmod(path, 0o755); err != nil {
		return fmt.Errorf("create directory: %w", err)
	}
	return nil
}

// createFile creates an empty file, mode 0644, unless something exists
// there already. Its parent must exist.
func createFile(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("create file: parent directory does not exist: %w", errdefs.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("create file: %w", err)
	}
	defer f.Close()
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("create file: %w", err)
	}
	return nil
}
