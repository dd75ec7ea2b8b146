package snapshot

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	securejoin "github.com/cyphar/filepath-securejoin"
	"golang.org/x/sys/unix"
)

const (
	whiteoutPrefix = ".wh."
	whiteoutMeta   = ".wh..wh."
	whiteoutOpaque = ".wh..wh..opq"
	opaqueXattr    = "trusted.overlay.opaque"
	paxXattrPrefix = "SCHILY.xattr."
)

// extractor writes the entries of one layer tar into root, which it owns
// exclusively while it runs (nothing else changes the tree underneath it).
type extractor struct {
	root string
	buf  []byte
	dirs []dirTimes
	// idmap, when set, maps the owners the tar records to those written.
	idmap func(uid, gid int) (int, int)
}

// owner is the owner hdr's entry is written with.
func (x *extractor) owner(hdr *tar.Header) (int, int) {
	if x.idmap == nil {
		return hdr.Uid, hdr.Gid
	}
	return x.idmap(hdr.Uid, hdr.Gid)
}

type dirTimes struct {
	path         string
	atime, mtime time.Time
}

// extract unpacks every entry of tr below root, converting whiteouts to
// overlay form, after g has checked its header. Directory times are
// applied last, deepest first, because creating children changes them.
func extract(ctx context.Context, root string, tr *tar.Reader, g *guard) error {
	return extractMapped(ctx, root, tr, g, nil)
}

// extractMapped is extract with the owners mapped by idmap (nil: none).
func extractMapped(ctx context.Context, root string, tr *tar.Reader, g *guard, idmap func(uid, gid int) (int, int)) error {
	x := &extractor{root: root, buf: make([]byte, 128<<10), idmap: idmap}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read tar entry: %w", err)
		}
		if err := g.entry(hdr); err != nil {
			return fmt.Errorf("entry %q: %w", shorten(hdr.Name), err)
		}
		if err := x.entry(hdr, tr); err != nil {
			return fmt.Errorf("extract %q: %w", hdr.Name, err)
		}
	}
	for i := len(x.dirs) - 1; i >= 0; i-- {
		if err := x.finishDir(x.dirs[i]); err != nil {
			return err
		}
	}
	return nil
}

// shorten keeps an error message short when it quotes a name that may be
// as long as a PAX header allows (a megabyte).
func shorten(name string) string {
	const keep = 128
	if len(name) <= keep {
		return name
	}
	return fmt.Sprintf("%s...(%d bytes)", name[:keep], len(name))
}

// finishDir sets a directory's times, skipping it when a later entry
// replaced it or one of its parents (the path is re-checked so a parent
// that became a symlink is never followed).
func (x *extractor) finishDir(d dirTimes) error {
	rel, err := filepath.Rel(x.root, d.path)
	if err != nil {
		return fmt.Errorf("relative path of %s: %w", d.path, err)
	}
	real, err := securejoin.SecureJoin(x.root, rel)
	if err != nil || real != d.path {
		return nil
	}
	fi, err := os.Lstat(d.path)
	if err != nil || !fi.IsDir() {
		return nil
	}
	return setTimes(d.path, d.atime, d.mtime)
}

// cleanName turns a tar entry name into a clean relative path, refusing
// names that are absolute or climb out with "..".
func cleanName(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("empty name: %w", errdefs.ErrInvalidArgument)
	}
	if path.IsAbs(name) {
		return "", fmt.Errorf("absolute path %q not allowed in layer: %w", name, errdefs.ErrInvalidArgument)
	}
	clean := path.Clean(name)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("path %q escapes the layer root: %w", name, errdefs.ErrInvalidArgument)
	}
	return clean, nil
}

// resolveParent returns the host path of the directory that holds clean,
// refusing a parent path that passes through a symlink: every entry of a
// layer diff names its own location, so a write through a link is either a
// broken layer or an attempt to escape.
func (x *extractor) resolveParent(clean string) (string, error) {
	parent := path.Dir(clean)
	lexical := filepath.Join(x.root, parent)
	real, err := securejoin.SecureJoin(x.root, parent)
	if err != nil {
		return "", fmt.Errorf("resolve %q: %w", parent, err)
	}
	if real != lexical {
		return "", fmt.Errorf("path %q passes through a symlink: %w", clean, errdefs.ErrInvalidArgument)
	}
	return real, nil
}

func (x *extractor) entry(hdr *tar.Header, r io.Reader) error {
	clean, err := cleanName(hdr.Name)
	if err != nil {
		return err
	}
	if clean == "." {
		return nil // the layer root itself: overlay takes it from the upper dir
	}
	parent, err := x.resolveParent(clean)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("create parent: %w", err)
	}
	base := path.Base(clean)
	if strings.HasPrefix(base, whiteoutPrefix) {
		return x.whiteout(hdr, parent, base)
	}
	target := filepath.Join(parent, base)
	if err := clearTarget(target, hdr.Typeflag == tar.TypeDir); err != nil {
		return err
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := os.Mkdir(target, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create dir: %w", err)
		}
	case tar.TypeReg, tar.TypeGNUSparse: // archive/tar reports the old TypeRegA as TypeReg
		if err := x.writeFile(target, r); err != nil {
			return err
		}
	case tar.TypeSymlink:
		if err := os.Symlink(hdr.Linkname, target); err != nil {
			return fmt.Errorf("create symlink: %w", err)
		}
	case tar.TypeLink:
		return x.hardlink(hdr, target)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		if err := mknod(target, hdr); err != nil {
			return err
		}
	case tar.TypeXGlobalHeader:
		return nil
	default:
		return fmt.Errorf("unsupported tar entry type %q: %w", hdr.Typeflag, errdefs.ErrInvalidArgument)
	}
	return x.applyMetadata(target, hdr)
}

// clearTarget removes what an earlier entry left at target, except that a
// directory stays when a directory replaces it (tar semantics: later entries
// win, directories merge).
func clearTarget(target string, isDir bool) error {
	fi, err := os.Lstat(target)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("inspect existing entry: %w", err)
	}
	if fi.IsDir() {
		if isDir {
			return nil
		}
		err = os.RemoveAll(target)
	} else {
		err = os.Remove(target)
	}
	if err != nil {
		return fmt.Errorf("replace existing entry: %w", err)
	}
	return nil
}

func (x *extractor) writeFile(target string, r io.Reader) error {
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("create file: %w", err)
	}
	if _, err := io.CopyBuffer(f, r, x.buf); err != nil {
		f.Close()
		return fmt.Errorf("write file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close file: %w", err)
	}
	return nil
}

// hardlink links target to an entry unpacked earlier in the same layer.
// Links are not allowed to name anything outside the layer.
func (x *extractor) hardlink(hdr *tar.Header, target string) error {
	clean, err := cleanName(hdr.Linkname)
	if err != nil {
		return fmt.Errorf("hard link target: %w", err)
	}
	parent, err := x.resolveParent(clean)
	if err != nil {
		return fmt.Errorf("hard link target: %w", err)
	}
	old := filepath.Join(parent, path.Base(clean))
	if clean == "." {
		old = x.root
	}
	fi, err := os.Lstat(old)
	if err != nil {
		return fmt.Errorf("hard link target %q is not in this layer: %w", hdr.Linkname, errdefs.ErrInvalidArgument)
	}
	if fi.IsDir() {
		return fmt.Errorf("hard link to directory %q: %w", hdr.Linkname, errdefs.ErrInvalidArgument)
	}
	if old == target {
		return nil
	}
	if err := os.Link(old, target); err != nil {
		return fmt.Errorf("create hard link: %w", err)
	}
	return nil
}

// whiteout turns an AUFS-style whiteout entry into overlayfs form: a 0:0
// character device for a deleted name, an xattr for an opaque directory.
func (x *extractor) whiteout(hdr *tar.Header, parent, base string) error {
	if base == whiteoutOpaque {
		if err := unix.Lsetxattr(parent, opaqueXattr, []byte("y"), 0); err != nil {
			return fmt.Errorf("mark opaque dir: %w", err)
		}
		return nil
	}
	if strings.HasPrefix(base, whiteoutMeta) {
		return nil // other AUFS metadata has no overlay meaning
	}
	name := strings.TrimPrefix(base, whiteoutPrefix)
	if name == "" || name == "." || name == ".." {
		return fmt.Errorf("invalid whiteout %q: %w", base, errdefs.ErrInvalidArgument)
	}
	target := filepath.Join(parent, name)
	if err := clearTarget(target, false); err != nil {
		return err
	}
	if err := unix.Mknod(target, unix.S_IFCHR, 0); err != nil {
		return fmt.Errorf("create whiteout: %w", err)
	}
	uid, gid := x.owner(hdr)
	if err := os.Lchown(target, uid, gid); err != nil {
		return fmt.Errorf("chown whiteout: %w", err)
	}
	return nil
}

func mknod(target string, hdr *tar.Header) error {
	mode := uint32(hdr.Mode & 0o7777)
	switch hdr.Typeflag {
	case tar.TypeChar:
		mode |= unix.S_IFCHR
	case tar.TypeBlock:
		mode |= unix.S_IFBLK
	case tar.TypeFifo:
		mode |= unix.S_IFIFO
	}
	dev := unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor))
	if err := unix.Mknod(target, mode, int(dev)); err != nil {
		return fmt.Errorf("create device node: %w", err)
	}
	return nil
}

// applyMetadata sets owner, mode (chown first: it clears setuid bits),
// xattrs and times. Directory times wait until the end of the layer.
func (x *extractor) applyMetadata(target string, hdr *tar.Header) error {
	uid, gid := x.owner(hdr)
	if err := os.Lchown(target, uid, gid); err != nil {
		return fmt.Errorf("chown: %w", err)
	}
	if hdr.Typeflag != tar.TypeSymlink {
		if err := unix.Chmod(target, uint32(hdr.Mode&0o7777)); err != nil {
			return fmt.Errorf("chmod: %w", err)
		}
	}
	for k, v := range hdr.PAXRecords {
		attr, ok := strings.CutPrefix(k, paxXattrPrefix)
		if !ok {
			continue
		}
		err := unix.Lsetxattr(target, attr, []byte(v), 0)
		if err != nil && !errors.Is(err, unix.ENOTSUP) && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("set xattr %s: %w", attr, err)
		}
	}
	atime := hdr.AccessTime
	if atime.IsZero() {
		atime = hdr.ModTime
	}
	if hdr.Typeflag == tar.TypeDir {
		x.dirs = append(x.dirs, dirTimes{path: target, atime: atime, mtime: hdr.ModTime})
		return nil
	}
	return setTimes(target, atime, hdr.ModTime)
}

func setTimes(p string, atime, mtime time.Time) error {
	if mtime.IsZero() {
		mtime = time.Unix(0, 0)
	}
	if atime.IsZero() {
		atime = mtime
	}
	ts := []unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("set times of %s: %w", p, err)
	}
	return nil
}
