package mount

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// isMountRoot reports whether path is the root of a mount, from its own
// statx (STATX_ATTR_MOUNT_ROOT, Linux 5.8), without reading the mount
// table, whose size grows with every mount on the node. A symlink is not
// followed. ok is false when the kernel does not tell.
func isMountRoot(path string) (root, ok bool, err error) {
	return isMountRootAt(unix.AT_FDCWD, path)
}

// isMountRootAt is isMountRoot of name in the directory dirfd.
func isMountRootAt(dirfd int, name string) (root, ok bool, err error) {
	var st unix.Statx_t
	err = unix.Statx(dirfd, name, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, 0, &st)
	if err != nil {
		return false, false, err
	}
	if st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		return false, false, nil
	}
	return st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, true, nil
}

// UnmountTree unmounts every mount at or below each of dirs by walking
// them, not the mount table: its cost is that of the directories (a
// pod's or a container's few files), not of the node's mounts. A mount is
// unmounted before the walk goes below it, so the walk never enters
// another file system's files, and what it uncovers is walked too. A dir
// that does not exist is fine. On a kernel that cannot tell a mount root
// by statx it falls back to UnmountUnder.
func UnmountTree(dirs ...string) error {
	var errs []error
	for _, dir := range dirs {
		if err := unmountTree(dir); errors.Is(err, errNoMountRoot) {
			return UnmountUnder(dirs...)
		} else if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

var errNoMountRoot = errors.New("statx does not report mount roots")

func unmountTree(path string) error {
	return unmountTreeAt(unix.AT_FDCWD, path, path)
}

// unmountTreeAt is unmountTree of name in the directory dirfd, whose
// path is path. The walk goes from directory fd to directory fd, as
// os.RemoveAll does, so that a tree deeper than PATH_MAX (a container's
// writable layer, under its bundle, may be one) is walked, not failed
// with ENAMETOOLONG; only a mount to unmount is named by its path.
func unmountTreeAt(dirfd int, name, path string) error {
	root, ok, err := isMountRootAt(dirfd, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unmount under %s: %w", path, err)
	}
	if !ok {
		return errNoMountRoot
	}
	if root {
		if err := Unmount(path); err != nil {
			return err
		}
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	// A file (a namespace pin, say) or a symlink is no directory to read.
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unmount under %s: %w", path, err)
	}
	dir := os.NewFile(uintptr(fd), path)
	defer dir.Close()
	entries, err := dir.ReadDir(-1)
	if err != nil {
		return fmt.Errorf("unmount under %s: %w", path, err)
	}
	var errs []error
	for _, e := range entries {
		// A symlink is not followed; a file may be a mount point too.
		if e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		if err := unmountTreeAt(fd, e.Name(), filepath.Join(path, e.Name())); err != nil {
			if errors.Is(err, errNoMountRoot) {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
