package snapshot

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	"github.com/opencontainers/go-digest"
	"golang.org/x/sys/unix"
)

// fileState is what the tests compare for each unpacked path.
type fileState struct {
	Type   string
	Mode   uint32 // permission and setuid/setgid/sticky bits
	UID    uint32
	GID    uint32
	Mtime  int64
	Link   string
	Rdev   uint64
	Body   string
	Opaque string
	Nlink  uint64
}

func stateOf(t *testing.T, p string) fileState {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatalf("lstat %s: %v", p, err)
	}
	fs := fileState{Mode: st.Mode & 0o7777, UID: st.Uid, GID: st.Gid, Mtime: st.Mtim.Sec, Rdev: st.Rdev}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		fs.Type = "dir"
		buf := make([]byte, 8)
		if n, err := unix.Lgetxattr(p, opaqueXattr, buf); err == nil {
			fs.Opaque = string(buf[:n])
		}
	case unix.S_IFREG:
		fs.Type = "file"
		fs.Nlink = uint64(st.Nlink)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fs.Body = string(b)
	case unix.S_IFLNK:
		fs.Type = "symlink"
		fs.Mode = 0
		l, err := os.Readlink(p)
		if err != nil {
			t.Fatal(err)
		}
		fs.Link = l
	case unix.S_IFCHR:
		fs.Type = "char"
	case unix.S_IFBLK:
		fs.Type = "block"
	case unix.S_IFIFO:
		fs.Type = "fifo"
	}
	return fs
}

func sampleLayer(t *testing.T) ([]byte, digest.Digest) {
	owned := file("etc/shadow", "secret", 0o640)
	owned.hdr.Uid, owned.hdr.Gid = 0, 42
	suid := file("bin/su", "su-binary", 0o4755)
	sticky := dir("tmp", 0o1777)
	www := dir("var/www", 0o750)
	www.hdr.Uid, www.hdr.Gid = 33, 33
	xattr := file("bin/ping", "ping", 0o755)
	xattr.hdr.PAXRecords = map[string]string{"SCHILY.xattr.user.crib": "test"}
	null := entry{hdr: tar.Header{Typeflag: tar.TypeChar, Name: "dev/null", Mode: 0o666, Devmajor: 1, Devminor: 3, ModTime: epoch}}
	fifo := entry{hdr: tar.Header{Typeflag: tar.TypeFifo, Name: "run/fifo", Mode: 0o600, ModTime: epoch}}
	return makeTar(t,
		dir("./", 0o755),
		dir("bin", 0o755),
		suid,
		xattr,
		hardlink("bin/su-again", "bin/su"),
		symlink("bin/sh", "busybox"),
		symlink("bin/abs", "/etc/shadow"),
		dir("etc", 0o755),
		owned,
		sticky,
		www,
		null,
		fifo,
		file("gone/.wh.removed", "", 0o644),
		dir("opaque", 0o755),
		file("opaque/.wh..wh..opq", "", 0o644),
		file("opaque/kept", "k", 0o644),
		file("dup", "first", 0o644),
		file("dup", "second", 0o600),
	)
}

func TestUnpackPreservesMetadataAndConvertsWhiteouts(t *testing.T) {
	requiresRoot(t)
	raw, diffID := sampleLayer(t)
	for _, tc := range []struct {
		name  string
		layer []byte
	}{
		{"uncompressed", raw},
		{"gzip", gzipBytes(t, raw)},
		{"zstd", zstdBytes(t, raw)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(t.TempDir(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			info, err := s.Unpack(context.Background(), "", diffID, bytes.NewReader(tc.layer), 0)
			if err != nil {
				t.Fatal(err)
			}
			want := Info{ChainID: diffID, DiffID: diffID, Size: int64(len(raw))}
			if diff := cmp.Diff(want, info); diff != "" {
				t.Errorf("Info (-want +got):\n%s", diff)
			}
			fsDir, err := s.Path(diffID)
			if err != nil {
				t.Fatal(err)
			}
			m := epoch.Unix()
			wantState := map[string]fileState{
				"bin":          {Type: "dir", Mode: 0o755, Mtime: m},
				"bin/su":       {Type: "file", Mode: 0o4755, Mtime: m, Body: "su-binary", Nlink: 2},
				"bin/su-again": {Type: "file", Mode: 0o4755, Mtime: m, Body: "su-binary", Nlink: 2},
				"bin/ping":     {Type: "file", Mode: 0o755, Mtime: m, Body: "ping", Nlink: 1},
				"bin/sh":       {Type: "symlink", Mtime: m, Link: "busybox"},
				"bin/abs":      {Type: "symlink", Mtime: m, Link: "/etc/shadow"},
				"etc/shadow":   {Type: "file", Mode: 0o640, GID: 42, Mtime: m, Body: "secret", Nlink: 1},
				"tmp":          {Type: "dir", Mode: 0o1777, Mtime: m},
				"var/www":      {Type: "dir", Mode: 0o750, UID: 33, GID: 33, Mtime: m},
				"dev/null":     {Type: "char", Mode: 0o666, Mtime: m, Rdev: unix.Mkdev(1, 3)},
				"run/fifo":     {Type: "fifo", Mode: 0o600, Mtime: m},
				"gone/removed": {Type: "char"},
				"opaque":       {Type: "dir", Mode: 0o755, Mtime: m, Opaque: "y"},
				"opaque/kept":  {Type: "file", Mode: 0o644, Mtime: m, Body: "k", Nlink: 1},
				"dup":          {Type: "file", Mode: 0o600, Mtime: m, Body: "second", Nlink: 1},
			}
			for p, w := range wantState {
				got := stateOf(t, filepath.Join(fsDir, p))
				if p == "gone/removed" {
					got.Mode, got.Mtime = 0, 0
				}
				if diff := cmp.Diff(w, got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", p, diff)
				}
			}
			for _, gone := range []string{"gone/.wh.removed", "opaque/.wh..wh..opq"} {
				if _, err := os.Lstat(filepath.Join(fsDir, gone)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s exists in snapshot (err %v)", gone, err)
				}
			}
			buf := make([]byte, 16)
			n, err := unix.Lgetxattr(filepath.Join(fsDir, "bin/ping"), "user.crib", buf)
			if err != nil || string(buf[:n]) != "test" {
				t.Errorf("xattr user.crib = %q, %v", buf[:n], err)
			}
		})
	}
}

func TestDiffIDMismatch(t *testing.T) {
	requiresRoot(t)
	root := t.TempDir()
	s, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := makeTar(t, file("a", "a", 0o644))
	wrong := digest.FromString("not this layer")
	_, err = s.Unpack(context.Background(), "", wrong, bytes.NewReader(gzipBytes(t, raw)), 0)
	if !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("Unpack error = %v, want invalid argument", err)
	}
	if left := listNames(t, filepath.Join(root, "snapshots")); len(left) != 0 {
		t.Errorf("snapshot dir not cleaned: %v", left)
	}
}

func TestMaxLayerSize(t *testing.T) {
	requiresRoot(t)
	root := t.TempDir()
	s, err := Open(root, Options{Limits: Limits{MaxSize: 4096}})
	if err != nil {
		t.Fatal(err)
	}
	raw, diffID := makeTar(t, file("big", string(bytes.Repeat([]byte{0}, 1<<20)), 0o644))
	_, err = s.Unpack(context.Background(), "", diffID, bytes.NewReader(gzipBytes(t, raw)), 0)
	if !errors.Is(err, errdefs.ErrResourceExhausted) {
		t.Fatalf("Unpack error = %v, want resource exhausted", err)
	}
	if left := listNames(t, filepath.Join(root, "snapshots")); len(left) != 0 {
		t.Errorf("snapshot dir not cleaned: %v", left)
	}
}

func TestConcurrentUnpackSameLayer(t *testing.T) {
	requiresRoot(t)
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	raw, diffID := makeTar(t, dir("d", 0o755), file("d/f", "data", 0o644))
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Unpack(context.Background(), "", diffID, bytes.NewReader(raw), 0)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("unpack %d: %v", i, err)
		}
	}
	ids, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]digest.Digest{diffID}, ids); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if left := listNames(t, s.dir); len(left) != 1 {
		t.Errorf("snapshot dir holds %v, want one snapshot", left)
	}
}
