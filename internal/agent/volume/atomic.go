package volume

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
)

// The layout the atomic writer keeps in a volume directory:
//
//	..2025_01_02_15_04_05.123456  the current files (a fresh directory per update)
//	..data -> ..2025_01_02_...    swapped with rename(2): the one switch
//	<name> -> ..data/<name>       one symlink per top-level name a container sees
//
// Names beginning with ".." are the writer's own; user paths never begin
// with "..", so the two cannot collide.
const (
	dataLink    = "..data"
	dataLinkTmp = "..data_tmp"
	tsPattern   = "..2006_01_02_15_04_05."
)

// file is one file of a payload.
type file struct {
	data []byte
	mode os.FileMode // permission bits
	uid  int         // owner, -1 to leave as is
}

// payload maps a relative, cleaned path to its file.
type payload map[string]file

// writeAtomic makes dir show exactly files. It does nothing when dir shows
// them already (same paths, bytes, modes and owners), so it is cheap to call
// on every sync. It reports whether it wrote a new version.
func writeAtomic(dir string, files payload) (bool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("create %s: %w", dir, err)
	}
	current, err := os.Readlink(filepath.Join(dir, dataLink))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read %s: %w", dataLink, err)
	}
	changed := true
	if current != "" && isOwnName(current) {
		same, err := sameContent(filepath.Join(dir, current), files)
		if err != nil {
			return false, err
		}
		changed = !same
	}
	if changed {
		next, err := writeVersion(dir, files)
		if err != nil {
			return false, err
		}
		if err := swapData(dir, next); err != nil {
			_ = os.RemoveAll(filepath.Join(dir, next))
			return false, err
		}
		current = next
	}
	// Links and leftovers are checked every time, so a crash between the
	// swap and here is repaired by the next call.
	if err := linkNames(dir, files); err != nil {
		return changed, err
	}
	if err := prune(dir, current, files); err != nil {
		return changed, err
	}
	return changed, nil
}

// isOwnName reports whether name is one of the writer's timestamped dirs.
func isOwnName(name string) bool {
	return strings.HasPrefix(name, "..") && !strings.Contains(name, "/") &&
		name != dataLink && name != dataLinkTmp
}

// writeVersion writes files into a new timestamped directory under dir and
// returns its name.
func writeVersion(dir string, files payload) (string, error) {
	tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format(tsPattern))
	if err != nil {
		return "", fmt.Errorf("create version directory: %w", err)
	}
	if err := os.Chmod(tsDir, 0o755); err != nil {
		_ = os.RemoveAll(tsDir)
		return "", fmt.Errorf("chmod version directory: %w", err)
	}
	for p, f := range files {
		if err := writeFile(tsDir, p, f); err != nil {
			_ = os.RemoveAll(tsDir)
			return "", err
		}
	}
	return filepath.Base(tsDir), nil
}

// writeFile writes one file into a version directory that nobody sees yet.
func writeFile(tsDir, rel string, f file) error {
	full := filepath.Join(tsDir, filepath.FromSlash(rel))
	if parent := filepath.Dir(full); parent != tsDir {
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return fmt.Errorf("create parent of %s: %w", rel, err)
		}
		for d := parent; d != tsDir; d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o755); err != nil {
				return fmt.Errorf("chmod parent of %s: %w", rel, err)
			}
		}
	}
	if err := os.WriteFile(full, f.data, f.mode); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := os.Chmod(full, f.mode); err != nil {
		return fmt.Errorf("chmod %s: %w", rel, err)
	}
	if f.uid >= 0 {
		if err := os.Lchown(full, f.uid, -1); err != nil {
			return fmt.Errorf("chown %s: %w", rel, err)
		}
	}
	return nil
}

// swapData points ..data at next with one rename.
func swapData(dir, next string) error {
	tmp := filepath.Join(dir, dataLinkTmp)
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale %s: %w", dataLinkTmp, err)
	}
	if err := os.Symlink(next, tmp); err != nil {
		return fmt.Errorf("link %s: %w", dataLinkTmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataLink)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("swap %s: %w", dataLink, err)
	}
	return nil
}

// topNames lists the first path element of every file.
func topNames(files payload) map[string]bool {
	tops := make(map[string]bool, len(files))
	for p := range files {
		top, _, _ := strings.Cut(p, "/")
		tops[top] = true
	}
	return tops
}

// linkNames makes <name> -> ..data/<name> for every top-level name.
func linkNames(dir string, files payload) error {
	for top := range topNames(files) {
		link := filepath.Join(dir, top)
		target := path.Join(dataLink, top)
		if got, err := os.Readlink(link); err == nil && got == target {
			continue
		}
		tmp := filepath.Join(dir, dataLinkTmp)
		_ = os.Remove(tmp)
		if err := os.Symlink(target, tmp); err != nil {
			return fmt.Errorf("link %s: %w", top, err)
		}
		// rename(2) replaces a stale symlink or file; a directory in the
		// way (never written by us) is removed first.
		if fi, err := os.Lstat(link); err == nil && fi.IsDir() {
			if err := os.RemoveAll(link); err != nil {
				return fmt.Errorf("replace %s: %w", top, err)
			}
		}
		if err := os.Rename(tmp, link); err != nil {
			_ = os.Remove(tmp)
			return fmt.Errorf("link %s: %w", top, err)
		}
	}
	return nil
}

// prune removes old version directories and names files no longer has.
func prune(dir, current string, files payload) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	tops := topNames(files)
	var errs []error
	for _, e := range entries {
		n := e.Name()
		var stale bool
		if strings.HasPrefix(n, "..") {
			stale = n != dataLink && n != current
		} else {
			stale = !tops[n]
		}
		if !stale {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
			errs = append(errs, fmt.Errorf("remove stale %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// sameContent reports whether tsDir holds exactly files.
func sameContent(tsDir string, files payload) (bool, error) {
	seen := 0
	same := true
	err := filepath.WalkDir(tsDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(tsDir, p)
		if err != nil {
			return err
		}
		want, ok := files[filepath.ToSlash(rel)]
		if !ok || !d.Type().IsRegular() {
			same = false
			return fs.SkipAll
		}
		seen++
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Mode().Perm() != want.mode || fi.Size() != int64(len(want.data)) {
			same = false
			return fs.SkipAll
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && want.uid >= 0 && int(st.Uid) != want.uid {
			same = false
			return fs.SkipAll
		}
		got, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want.data) {
			same = false
			return fs.SkipAll
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("compare %s: %w", tsDir, err)
	}
	return same && seen == len(files), nil
}

// checkPaths validates every path of a payload: relative, clean, no ".."
// element, not beginning with "..", and no file that is also another's
// parent directory.
func checkPaths(files payload) error {
	for p := range files {
		if err := checkPath(p); err != nil {
			return err
		}
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if _, clash := files[d]; clash {
				return fmt.Errorf("path %q is both a file and the directory of %q: %w", d, p, errdefs.ErrInvalidArgument)
			}
		}
	}
	return nil
}

func checkPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty path: %w", errdefs.ErrInvalidArgument)
	case len(p) > 4096:
		return fmt.Errorf("path longer than 4096 bytes: %w", errdefs.ErrInvalidArgument)
	case path.IsAbs(p):
		return fmt.Errorf("path %q must be relative: %w", p, errdefs.ErrInvalidArgument)
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("path %q must not begin with \"..\": %w", p, errdefs.ErrInvalidArgument)
	case hasBackstep(p):
		return fmt.Errorf("path %q must not contain \"..\": %w", p, errdefs.ErrInvalidArgument)
	case path.Clean(p) != p || strings.ContainsRune(p, 0):
		return fmt.Errorf("path %q is not clean: %w", p, errdefs.ErrInvalidArgument)
	}
	return nil
}
