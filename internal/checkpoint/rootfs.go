package checkpoint

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
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// writeRootfsDiff writes the writable layer upper as a tar to w, and
// returns the image's paths the container deleted ("/etc/motd"), for
// deleted.files: overlayfs whiteouts, and what an opaque directory (one
// removed and made again) hides of the layers in lower (top first). Paths
// in skip (the spec's mount points, whose stubs runc made) are left out
// with what is under them.
func writeRootfsDiff(ctx context.Context, w io.Writer, upper string, lower []string, skip map[string]bool) ([]string, error) {
	tw := tar.NewWriter(w)
	links := map[uint64]string{} // inode -> first name, for hard links
	var deleted []string
	// The container runs on while its layer is walked: a file it removes
	// meanwhile is left out, as it would be a moment later.
	err := filepath.WalkDir(upper, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p != upper {
			return nil
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(upper, p)
		if err != nil || rel == "." {
			return err
		}
		abs := "/" + filepath.ToSlash(rel)
		if skip[abs] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		st, _ := fi.Sys().(*syscall.Stat_t)
		if fi.Mode()&fs.ModeCharDevice != 0 && st != nil && st.Rdev == 0 {
			deleted = append(deleted, abs) // a whiteout
			return nil
		}
		if fi.IsDir() && opaque(p) {
			hidden, err := hiddenBy(p, abs, lower)
			if err != nil {
				return err
			}
			deleted = append(deleted, hidden...)
		}
		if err := addEntry(tw, p, rel, fi, st, links); !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("archive the writable layer: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("archive the writable layer: %w", err)
	}
	sort.Strings(deleted)
	return deleted, nil
}

// addEntry writes the file p, named rel in the tar, with its xattrs but
// overlayfs' own.
// A file that is gone before its header is written is fs.ErrNotExist;
// one that shrinks while it is copied is padded with zeros to the size
// its header gave.
func addEntry(tw *tar.Writer, p, rel string, fi fs.FileInfo, st *syscall.Stat_t, links map[uint64]string) error {
	var target string
	if fi.Mode()&fs.ModeSymlink != 0 {
		t, err := os.Readlink(p)
		if err != nil {
			return err
		}
		target = t
	}
	hdr, err := tar.FileInfoHeader(fi, target)
	if err != nil {
		return err
	}
	hdr.Name = filepath.ToSlash(rel)
	if fi.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uname, hdr.Gname = "", ""
	hdr.Format = tar.FormatPAX
	if st != nil {
		hdr.Uid, hdr.Gid = int(st.Uid), int(st.Gid)
		if fi.Mode().IsRegular() && st.Nlink > 1 {
			if first, ok := links[st.Ino]; ok {
				hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
			}
		}
	}
	var f *os.File
	if hdr.Typeflag == tar.TypeReg {
		if f, err = os.Open(p); err != nil {
			return err
		}
		defer f.Close()
	}
	if err := addXattrs(hdr, p); err != nil {
		return err
	}
	// Only a name that is in the tar may be a later hard link's target.
	if hdr.Typeflag == tar.TypeReg && st != nil && st.Nlink > 1 {
		links[st.Ino] = hdr.Name
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if f == nil {
		return nil
	}
	n, err := io.CopyN(tw, f, hdr.Size)
	if errors.Is(err, io.EOF) {
		_, err = io.CopyN(tw, zeros{}, hdr.Size-n)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	return nil
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// addXattrs records p's extended attributes in hdr, as PAX records.
func addXattrs(hdr *tar.Header, p string) error {
	names, err := listXattrs(p)
	if err != nil || len(names) == 0 {
		return err
	}
	for _, name := range names {
		if strings.HasPrefix(name, "trusted.overlay.") || strings.HasPrefix(name, "user.overlay.") {
			continue
		}
		v, err := getXattr(p, name)
		if err != nil {
			return err
		}
		if hdr.PAXRecords == nil {
			hdr.PAXRecords = map[string]string{}
		}
		hdr.PAXRecords["SCHILY.xattr."+name] = string(v)
	}
	return nil
}

func listXattrs(p string) ([]string, error) {
	size, err := unix.Llistxattr(p, nil)
	if err != nil || size == 0 {
		if errors.Is(err, unix.ENOTSUP) {
			return nil, nil
		}
		return nil, err
	}
	buf := make([]byte, size)
	size, err = unix.Llistxattr(p, buf)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range strings.Split(string(buf[:size]), "\x00") {
		if n != "" {
			names = append(names, n)
		}
	}
	return names, nil
}

func getXattr(p, name string) ([]byte, error) {
	size, err := unix.Lgetxattr(p, name, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: xattr %s: %w", p, name, err)
	}
	buf := make([]byte, size)
	size, err = unix.Lgetxattr(p, name, buf)
	if err != nil {
		return nil, fmt.Errorf("%s: xattr %s: %w", p, name, err)
	}
	return buf[:size], nil
}

// opaque reports whether the upper dir p hides what the layers hold there.
func opaque(p string) bool {
	for _, name := range []string{"trusted.overlay.opaque", "user.overlay.opaque"} {
		if v, err := getXattr(p, name); err == nil && string(v) == "y" {
			return true
		}
	}
	return false
}

// hiddenBy lists what the layers lower hold in the directory abs that the
// opaque upper dir p hides: the names the container removed (a name p
// holds again is in the tar, and a restore removes deleted.files' paths
// after it unpacks it). Only the directory's own entries are listed:
// removing one removes what is under it.
func hiddenBy(p, abs string, lower []string) ([]string, error) {
	var hidden []string
	seen := map[string]bool{}
	for _, l := range lower {
		entries, err := os.ReadDir(filepath.Join(l, filepath.FromSlash(abs)))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			name := e.Name()
			if seen[name] {
				continue
			}
			seen[name] = true
			if _, err := os.Lstat(filepath.Join(p, name)); err == nil {
				continue
			}
			hidden = append(hidden, path.Join(abs, name))
		}
		// A lower layer's own opaque dir hides the layers under it.
		if opaque(filepath.Join(l, filepath.FromSlash(abs))) {
			break
		}
	}
	return hidden, nil
}
