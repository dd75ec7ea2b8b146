package mount

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// IDMappedOverlay mounts on target an overlay whose lower layers are seen
// through the id mapping of the user namespace userns (an open
// /proc/PID/ns/user or a pinned copy of it): a file owned by 0 in a layer is
// owned, in the overlay, by the host id that the namespace maps 0 to. The
// layers themselves are not touched, so they stay shared with overlays that
// are not mapped. upper is not mapped: what the container writes is stored
// with its host ids. With no upper (and no work) dir the overlay is
// read-only, and needs two lower layers at least. lower is ordered as
// overlayfs' lowerdir, topmost first.
//
// overlayfs takes a private clone of each lower layer, but only of one
// attached to the mount tree: each mapped layer is attached under scratch
// (a directory of the caller's, made if missing) while the overlay is made,
// then detached and scratch removed. A crash in between leaves mounts only
// under scratch, which the caller's cleanup of its directory unmounts.
// Layers are handed over one by one ("lowerdir+", Linux 6.8), so their
// number is not bounded by the size of a mount option string.
func IDMappedOverlay(lower []string, upper, work, target, scratch string, userns *os.File) (err error) {
	if len(lower) == 0 {
		return fmt.Errorf("id-mapped overlay on %s: no lower layer", target)
	}
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		return fmt.Errorf("id-mapped overlay on %s: %w", target, err)
	}
	var attached []string
	defer func() {
		// The overlay holds private clones of the layers: what was
		// attached here goes, success or not. Only empty directories are
		// removed, and only once nothing is mounted on them: a recursive
		// removal through a layer still attached would delete the layer.
		var errs []error
		for _, p := range attached {
			if uerr := Unmount(p); uerr != nil {
				errs = append(errs, uerr)
			}
		}
		if len(errs) == 0 {
			errs = append(errs, removeEmptyDirs(scratch))
		}
		if cerr := errors.Join(errs...); cerr != nil {
			err = errors.Join(err, fmt.Errorf("id-mapped overlay on %s: clean up: %w", target, cerr))
		}
	}()
	fsfd, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("id-mapped overlay on %s: fsopen: %w", target, err)
	}
	defer unix.Close(fsfd)
	for i, dir := range lower {
		mapped := filepath.Join(scratch, strconv.Itoa(i))
		if err := attachMapped(dir, mapped, userns); err != nil {
			return fmt.Errorf("id-mapped overlay on %s: %w", target, err)
		}
		attached = append(attached, mapped)
		if err := unix.FsconfigSetString(fsfd, "lowerdir+", mapped); err != nil {
			return fmt.Errorf("id-mapped overlay on %s: lowerdir+ %s: %w", target, dir, err)
		}
	}
	var attrs int
	if upper == "" {
		attrs = unix.MOUNT_ATTR_RDONLY
	} else {
		for _, kv := range [][2]string{{"upperdir", upper}, {"workdir", work}} {
			if err := unix.FsconfigSetString(fsfd, kv[0], kv[1]); err != nil {
				return fmt.Errorf("id-mapped overlay on %s: %s=%s: %w", target, kv[0], kv[1], err)
			}
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return fmt.Errorf("id-mapped overlay on %s: create: %w", target, err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, attrs)
	if err != nil {
		return fmt.Errorf("id-mapped overlay on %s: fsmount: %w", target, err)
	}
	defer unix.Close(mfd)
	if err := unix.MoveMount(mfd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("id-mapped overlay on %s: attach: %w", target, err)
	}
	return nil
}

// attachMapped mounts at target (made here) a copy of the mount of dir
// that maps ids through userns.
func attachMapped(dir, target string, userns *os.File) error {
	if err := os.Mkdir(target, 0o700); err != nil {
		return fmt.Errorf("map ids of %s: %w", dir, err)
	}
	tree, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("clone %s: %w", dir, err)
	}
	defer unix.Close(tree)
	// Read-only too: a lower layer is never written, and a clone that could
	// be written would be a second way into a shared layer.
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_RDONLY, Userns_fd: uint64(userns.Fd())}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return fmt.Errorf("map ids of %s: %w", dir, err)
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attach the mapped %s: %w", dir, err)
	}
	return nil
}

// ProbeIDMappedOverlay reports whether this kernel can mount an overlay of
// id-mapped layers from the file system that holds dir, by mounting one in
// a scratch directory under dir and removing it again. The scratch of a
// probe that a crash interrupted is removed first.
func ProbeIDMappedOverlay(dir string, userns *os.File) (err error) {
	stale, _ := filepath.Glob(filepath.Join(dir, ".idmap-probe-*"))
	for _, s := range stale {
		if err := errors.Join(UnmountUnder(s), os.RemoveAll(s)); err != nil {
			return fmt.Errorf("probe id-mapped overlay: remove an earlier probe: %w", err)
		}
	}
	scratch, err := os.MkdirTemp(dir, ".idmap-probe-")
	if err != nil {
		return fmt.Errorf("probe id-mapped overlay: %w", err)
	}
	defer func() {
		err = errors.Join(err, Unmount(scratch+"/merged"), os.RemoveAll(scratch))
	}()
	for _, d := range []string{"lower", "upper", "work", "merged"} {
		if err := os.Mkdir(scratch+"/"+d, 0o700); err != nil {
			return fmt.Errorf("probe id-mapped overlay: %w", err)
		}
	}
	return IDMappedOverlay([]string{scratch + "/lower"}, scratch+"/upper", scratch+"/work", scratch+"/merged", scratch+"/mapped", userns)
}

// removeEmptyDirs removes dir and the empty directories below it; it fails,
// removing nothing more, at the first one that is not empty.
func removeEmptyDirs(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() {
			return fmt.Errorf("remove %s: %s is not a directory", dir, e.Name())
		}
		if err := removeEmptyDirs(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return os.Remove(dir)
}
