package checkpoint

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A running container changes its layer while it is archived: a file
// removed after the walk saw it is left out (and its other name, a hard
// link, is then written whole, not as a link to it), and one truncated
// while it is copied keeps the size its header gave, padded with zeros.
func TestAddEntryOfAChangingFile(t *testing.T) {
	dir := t.TempDir()
	gone := filepath.Join(dir, "gone")
	shrunk := filepath.Join(dir, "shrunk")
	if err := os.WriteFile(gone, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shrunk, []byte(strings.Repeat("a", 1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.Link(gone, other); err != nil {
		t.Fatal(err)
	}
	goneInfo, _ := os.Lstat(gone)
	otherInfo, _ := os.Lstat(other)
	shrunkInfo, _ := os.Lstat(shrunk)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(shrunk, 10); err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	links := map[uint64]string{}
	err := addEntry(tw, gone, "gone", goneInfo, goneInfo.Sys().(*syscall.Stat_t), links)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("addEntry of a removed file: %v, want ErrNotExist", err)
	}
	if buf.Len() != 0 || len(links) != 0 {
		t.Fatalf("addEntry of a removed file wrote %d bytes and links %v", buf.Len(), links)
	}
	if err := addEntry(tw, other, "other", otherInfo, otherInfo.Sys().(*syscall.Stat_t), links); err != nil {
		t.Fatalf("addEntry of the removed file's other name: %v", err)
	}
	if err := addEntry(tw, shrunk, "shrunk", shrunkInfo, shrunkInfo.Sys().(*syscall.Stat_t), links); err != nil {
		t.Fatalf("addEntry of a truncated file: %v", err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&buf)
	hdr, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	if hdr.Name != "other" || hdr.Typeflag != tar.TypeReg || hdr.Size != 1 {
		t.Fatalf("the removed file's other name: %q type %c size %d, want a regular file of 1 byte", hdr.Name, hdr.Typeflag, hdr.Size)
	}
	hdr, err = tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("a", 10) + strings.Repeat("\x00", 990)
	if hdr.Name != "shrunk" || string(data) != want {
		t.Fatalf("entry %q with %d bytes (%q...), want shrunk with 10 a's and 990 zeros", hdr.Name, len(data), data[:20])
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Fatalf("more entries than the truncated file: %v", err)
	}
}
