package netns

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/crib-dev/crib/internal/mount"
)

// Holder keeps namespaces open as descriptors of a process of its own (see
// internal/nshold), so that a pin is a symlink to the holder's
// /proc/PID/fd/N rather than a bind mount in the host's table.
type Holder interface {
	// Put hands fd over under key and returns the path that opens it.
	Put(key string, fd int) (string, error)
	// Drop closes what the keys starting with prefix hold.
	Drop(prefix string) (int, error)
	// List returns every key held, with the path that opens it.
	List() (map[string]string, error)
}

// pinAt pins the namespace open as fd at target: a symlink to its holder's
// descriptor when there is a holder, a bind mount of it otherwise. A bind
// mount's target must not exist; a link replaces what target was in one
// rename, so that a pin whose holder ended is pinned anew (Repin) without
// target ever opening another namespace.
func pinAt(hold Holder, fd int, target string) error {
	if hold == nil {
		f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o400)
		if err != nil {
			return err
		}
		f.Close()
		return mount.BindFD(fd, target)
	}
	path, err := hold.Put(target, fd)
	if err != nil {
		return err
	}
	tmp := target + ".new"
	_ = os.Remove(tmp)
	err = os.Symlink(path, tmp)
	if err == nil {
		err = os.Rename(tmp, target)
	}
	if err != nil {
		_ = os.Remove(tmp)
		_, _ = hold.Drop(target)
		return fmt.Errorf("link %s to the holder's %s: %w", target, path, err)
	}
	return nil
}

// pinFile is pinAt with the namespace named by a /proc path.
func pinFile(hold Holder, src, target string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	return pinAt(hold, int(f.Fd()), target)
}

// Repin pins anew at target, a pin whose holder ended, the namespace that
// src opens (a /proc/PID/ns path of a process still in it), in hold (a new
// holder).
func Repin(hold Holder, src, target string) error {
	if err := pinFile(hold, src, target); err != nil {
		return fmt.Errorf("repin %s: %w", target, err)
	}
	return nil
}

// IsPinned reports whether path opens a namespace: a bind-mounted pin, or
// a link to a holder's descriptor. A plain file (a creation that died
// before it pinned), a link whose holder is gone or nothing at all is not.
func IsPinned(path string) (bool, error) {
	var st unix.Statfs_t
	err := unix.Statfs(path, &st)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("is %s a pinned namespace: %w", path, err)
	}
	return st.Type == unix.NSFS_MAGIC, nil
}
