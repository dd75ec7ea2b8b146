package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestTarTree: a layer keeps what the suite's images rely on (a set-uid
// program for nonewprivs, symlinks such as agnhost-2, hard links as Debian
// ships them, owners), and the same tree gives the same bytes.
func TestTarTree(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "usr/local/bin"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "usr/local/bin/nnp"), []byte("nnp"), 0o755))
	must(os.Chmod(filepath.Join(dir, "usr/local/bin/nnp"), os.ModeSetuid|0o755))
	must(os.WriteFile(filepath.Join(dir, "agnhost"), []byte("agnhost"), 0o755))
	must(os.Symlink("agnhost", filepath.Join(dir, "agnhost-2")))
	must(os.Link(filepath.Join(dir, "agnhost"), filepath.Join(dir, "hard")))
	must(os.WriteFile(filepath.Join(dir, "owned"), []byte("x"), 0o600))
	if os.Getuid() == 0 {
		must(os.Chown(filepath.Join(dir, "owned"), 1234, 5678))
	}

	var first, second bytes.Buffer
	must(tarTree(dir, &first))
	must(tarTree(dir, &second))
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Error("two layers of one tree differ")
	}

	got := map[string]*tar.Header{}
	tr := tar.NewReader(&first)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(err)
		got[h.Name] = h
		if !h.ModTime.Equal(epoch) {
			t.Errorf("%s: mtime %v, want %v", h.Name, h.ModTime, epoch)
		}
	}
	if h := got["usr/local/bin/nnp"]; h == nil || h.Mode&0o4000 == 0 {
		t.Errorf("nnp lost its set-uid bit: %+v", h)
	}
	if h := got["agnhost-2"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "agnhost" {
		t.Errorf("agnhost-2 is not a symlink to agnhost: %+v", h)
	}
	// WalkDir is lexical: agnhost comes first, hard links to it.
	if h := got["hard"]; h == nil || h.Typeflag != tar.TypeLink || h.Linkname != "agnhost" {
		t.Errorf("hard is not a hard link to agnhost: %+v", h)
	}
	if h := got["usr/"]; h == nil || h.Typeflag != tar.TypeDir {
		t.Errorf("usr/ is not a directory entry: %+v", h)
	}
	if os.Getuid() == 0 {
		if h := got["owned"]; h == nil || h.Uid != 1234 || h.Gid != 5678 || h.Uname != "" {
			t.Errorf("owned lost its owner: %+v", h)
		}
	}
}

// TestLocalRef: an image keeps its repository path and tag, on the
// registry given.
func TestLocalRef(t *testing.T) {
	for ref, want := range map[string]string{
		"registry.k8s.io/e2e-test-images/agnhost:2.66.1": "127.0.0.1:5000/e2e-test-images/agnhost:2.66.1",
		"registry.k8s.io/pause:3.10.2":                   "127.0.0.1:5000/pause:3.10.2",
	} {
		got, err := localRef(ref, "127.0.0.1:5000")
		if err != nil || got.String() != want {
			t.Errorf("localRef(%s) = %v, %v; want %s", ref, got, err, want)
		}
	}
	if _, err := localRef("not a ref", "127.0.0.1:5000"); err == nil {
		t.Error("a bad reference was taken")
	}
}
