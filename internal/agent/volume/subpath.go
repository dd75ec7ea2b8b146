package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/crib-dev/crib/internal/mount"
)

// subPathDir holds, under a pod's directory, the bind mounts of its
// containers' subPaths, named as the kubelet names them:
// volume-subpaths/<volume>/<container>/<volumeMount index>.
const subPathDir = "volume-subpaths"

// PrepareSubPath makes the subPath of one volumeMount safe to hand to a
// runtime, the way the kubelet does since CVE-2017-1002101. A container that
// can write into a volume could otherwise plant a symlink where a subPath
// points (evil -> /) and have the runtime bind-mount whatever it leads to.
//
// subPath (already expanded from subPathExpr) must be relative and free of
// "..". Symlinks on the way are resolved once and must stay inside the
// volume (configMap and secret keys are symlinks into "..data"); then the
// resolved path is opened one component at a time from the volume
// directory without following any symlink, so a symlink swapped in
// meanwhile is refused, never followed. Directories that do not exist yet
// are created on the way, with the volume directory's mode, as the
// kubelet does. The object finally opened is bind-mounted, through its
// descriptor, on <Root>/<uid>/volume-subpaths/<volume>/<container>/<index>
// (a directory or an empty file to match it), and that path is returned for
// the runtime to mount into the container.
//
// An existing mount there of the same object is kept; a mount of anything
// else (the container was recreated, the subPath now resolves elsewhere) is
// replaced, so mounts never stack. Remove unmounts them with the rest of
// the pod. Refusals are ErrInvalidArgument errors naming the volume and the
// subPath; nothing is mounted then.
func (m *Manager) PrepareSubPath(uid, volumeName, volumePath, subPath, container string, index int) (string, error) {
	fail := func(err error) (string, error) {
		return "", fmt.Errorf("prepare subPath %q of volume %q for container %q: %w", subPath, volumeName, container, err)
	}
	for _, n := range [][2]string{{"pod uid", uid}, {"volume name", volumeName}, {"container name", container}} {
		if err := checkName(n[0], n[1]); err != nil {
			return fail(err)
		}
	}
	if index < 0 {
		return fail(fmt.Errorf("invalid volumeMount index %d: %w", index, errdefs.ErrInvalidArgument))
	}
	if !filepath.IsAbs(volumePath) {
		return fail(fmt.Errorf("volume path %q is not absolute: %w", volumePath, errdefs.ErrInvalidArgument))
	}
	parts, err := splitSubPath(subPath)
	if err != nil {
		return fail(err)
	}
	podDir, err := m.podDir(uid, true)
	if err != nil {
		return fail(err)
	}
	fd, err := openSubPath(volumePath, parts)
	if err != nil {
		return fail(err)
	}
	defer unix.Close(fd)
	target := filepath.Join(podDir, subPathDir, volumeName, container, strconv.Itoa(index))
	if err := m.bindSubPath(fd, target); err != nil {
		return fail(err)
	}
	return target, nil
}

// splitSubPath checks a subPath and returns its components, without the
// empty and "." ones.
func splitSubPath(p string) ([]string, error) {
	switch {
	case p == "":
		return nil, fmt.Errorf("subPath is empty: %w", errdefs.ErrInvalidArgument)
	case strings.ContainsRune(p, 0):
		return nil, fmt.Errorf("subPath holds a NUL byte: %w", errdefs.ErrInvalidArgument)
	case filepath.IsAbs(p):
		return nil, fmt.Errorf("subPath must be relative: %w", errdefs.ErrInvalidArgument)
	}
	var parts []string
	for _, s := range strings.Split(p, "/") {
		switch s {
		case "", ".":
		case "..":
			return nil, fmt.Errorf("subPath must not contain '..': %w", errdefs.ErrInvalidArgument)
		default:
			parts = append(parts, s)
		}
	}
	return parts, nil
}

// openSubPath resolves parts under the volume directory and returns a
// descriptor (O_PATH for what existed, O_RDONLY for a directory it made)
// of the object they name, creating missing directories.
func openSubPath(volumePath string, parts []string) (int, error) {
	base, err := filepath.EvalSymlinks(volumePath)
	if err != nil {
		return -1, fmt.Errorf("resolve volume directory: %w", err)
	}
	existing, missing, err := resolveInVolume(base, parts)
	if err != nil {
		return -1, err
	}
	fd, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open volume directory: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("stat volume directory: %w", err)
	}
	mode := st.Mode & 0o7777
	for _, name := range existing {
		next, err := openNoFollow(fd, name)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	for _, name := range missing {
		next, err := makeDirAt(fd, name, mode)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// resolveInVolume follows parts from base (a path without symlinks),
// resolving each symlink met on the way, and returns the components of the
// resolved path that exist, relative to base, then those that do not. A
// symlink that leads out of base, or nowhere, is refused. It reads paths
// by name and so can be raced; openSubPath does not trust it beyond
// picking names, and opens them without following symlinks.
func resolveInVolume(base string, parts []string) (existing, missing []string, err error) {
	cur := base
	for i, name := range parts {
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			missing = parts[i:]
			break
		}
		if errors.Is(err, unix.ENOTDIR) {
			return nil, nil, fmt.Errorf("a component of the subPath is not a directory: %w", errdefs.ErrInvalidArgument)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("resolve subPath: %w", err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			real, err := filepath.EvalSymlinks(next)
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil, fmt.Errorf("symlink %q in the subPath leads nowhere: %w", name, errdefs.ErrInvalidArgument)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("resolve symlink %q in the subPath: %w", name, errdefs.ErrInvalidArgument)
			}
			if !within(base, real) {
				return nil, nil, fmt.Errorf("symlink %q in the subPath leads out of the volume: %w", name, errdefs.ErrInvalidArgument)
			}
			next = real
		}
		cur = next
	}
	rel, err := filepath.Rel(base, cur)
	if err != nil || !within(base, cur) {
		return nil, nil, fmt.Errorf("subPath leads out of the volume: %w", errdefs.ErrInvalidArgument)
	}
	if rel != "." {
		existing = strings.Split(rel, string(filepath.Separator))
	}
	return existing, missing, nil
}

// within reports whether path is base or below it; both are clean and
// absolute.
func within(base, path string) bool {
	return path == base || strings.HasPrefix(path, strings.TrimSuffix(base, "/")+"/")
}

// openNoFollow opens name in the directory dirfd as an O_PATH descriptor,
// refusing a symlink.
func openNoFollow(dirfd int, name string) (int, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOTDIR) {
		return -1, fmt.Errorf("open %q in the subPath: not below a directory: %w", name, errdefs.ErrInvalidArgument)
	}
	if err != nil {
		return -1, fmt.Errorf("open %q in the subPath: %w", name, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("stat %q in the subPath: %w", name, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		unix.Close(fd)
		return -1, fmt.Errorf("%q in the subPath became a symlink: %w", name, errdefs.ErrInvalidArgument)
	}
	return fd, nil
}

// makeDirAt creates the directory name in dirfd with mode (whatever the
// umask) and opens it without following a symlink. A directory someone else
// made meanwhile is fine; anything else there is refused by the open.
func makeDirAt(dirfd int, name string, mode uint32) (int, error) {
	err := unix.Mkdirat(dirfd, name, mode&0o777)
	created := err == nil
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, fmt.Errorf("create %q in the subPath: %w", name, err)
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return -1, fmt.Errorf("open %q in the subPath: not a directory: %w", name, errdefs.ErrInvalidArgument)
	}
	if err != nil {
		return -1, fmt.Errorf("open %q in the subPath: %w", name, err)
	}
	if created {
		if err := unix.Fchmod(fd, mode); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("chmod %q in the subPath: %w", name, err)
		}
	}
	return fd, nil
}

// bindSubPath bind-mounts the object fd holds on target, unless target
// already is a mount of that very object.
func (m *Manager) bindSubPath(fd int, target string) error {
	var src unix.Stat_t
	if err := unix.Fstat(fd, &src); err != nil {
		return fmt.Errorf("stat subPath: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return fmt.Errorf("create subPath mount directory: %w", err)
	}
	mounted, err := mount.IsMountPoint(target)
	if err != nil {
		return err
	}
	if mounted {
		var cur unix.Stat_t
		if err := unix.Stat(target, &cur); err == nil && cur.Dev == src.Dev && cur.Ino == src.Ino {
			return nil
		}
		if err := mount.Unmount(target); err != nil {
			return err
		}
	}
	// A fresh target of the source's type: a directory for a directory,
	// an empty file for anything else (a file target takes any non-directory).
	if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("replace subPath mount point: %w", err)
	}
	isDir := src.Mode&unix.S_IFMT == unix.S_IFDIR
	if isDir {
		err = os.Mkdir(target, 0o750)
	} else {
		var f *os.File
		if f, err = os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640); err == nil {
			err = f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("create subPath mount point: %w", err)
	}
	if err := mount.BindFD(fd, target); err != nil {
		_ = os.Remove(target)
		return err
	}
	m.log.Debug("subPath mounted", "path", target)
	return nil
}
