package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/crib-dev/crib/internal/snapshot"
)

type entry struct {
	name, link, data string
	typ              byte
}

func tarOf(t *testing.T, entries []entry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		hdr := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: typ, Mode: 0o644, Size: int64(len(e.data))}
		if typ != tar.TypeReg {
			hdr.Size = 0
		}
		if typ == tar.TypeDir {
			hdr.Mode = 0o755
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.data)[:hdr.Size]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestUnpackHostile unpacks an archive whose CRIU images try to leave
// their directory, and ones whose writable layer tries to write outside
// the rootfs, by a name and through a symlink: those are refused, nothing
// lands outside, and what is legitimate lands inside.
func TestUnpackHostile(t *testing.T) {
	dir := t.TempDir()
	rootfs := filepath.Join(dir, "rootfs")
	images := filepath.Join(dir, "images")
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, data string) {
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(rootfs, "gone"), "x")
	diff := tarOf(t, []entry{
		{name: "kept.txt", data: "kept"},
	})
	arch := tarOf(t, []entry{
		{name: ConfigDumpFile, data: `{"id":"x"}`},
		{name: "checkpoint/inventory.img", data: "inv"},
		{name: "checkpoint/../../escaped-image", data: "evil"},
		{name: RootFsDiffTar, data: string(diff)},
		{name: DeletedFilesFile, data: `["/gone", "/../../x"]`},
	})
	p := filepath.Join(dir, "a.tar")
	write(p, string(arch))
	if err := Unpack(context.Background(), p, images, rootfs, snapshot.Limits{}, nil); err != nil {
		t.Fatalf("Unpack: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(rootfs, "kept.txt")); err != nil || string(data) != "kept" {
		t.Errorf("kept.txt = %q, %v", data, err)
	}
	if data, err := os.ReadFile(filepath.Join(images, "inventory.img")); err != nil || string(data) != "inv" {
		t.Errorf("inventory.img = %q, %v", data, err)
	}
	if _, err := os.Lstat(filepath.Join(rootfs, "gone")); err == nil {
		t.Errorf("/gone is in deleted.files but still there")
	}
	// A name that climbs out, or one through a symlink, is refused.
	for _, hostile := range [][]entry{
		{{name: "../../escaped-by-name", data: "evil"}},
		{{name: "etc", typ: tar.TypeSymlink, link: dir}, {name: "etc/escaped-by-link", data: "evil"}},
	} {
		bad := tarOf(t, []entry{{name: ConfigDumpFile, data: `{}`}, {name: RootFsDiffTar, data: string(tarOf(t, hostile))}})
		write(p, string(bad))
		if err := Unpack(context.Background(), p, images, rootfs, snapshot.Limits{}, nil); err == nil {
			t.Errorf("Unpack of a diff with %s succeeded", hostile[len(hostile)-1].name)
		}
	}
	for _, outside := range []string{"escaped-by-link", "escaped-image", "escaped-by-name", "x"} {
		if _, err := os.Stat(filepath.Join(dir, outside)); err == nil {
			t.Errorf("%s was written outside the rootfs", outside)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(dir), outside)); err == nil {
			t.Errorf("%s was written outside the rootfs", outside)
		}
	}
}

// TestUnpackDiffWithinItsSize refuses a writable layer whose entries
// declare more bytes than the layer's tar holds.
func TestUnpackDiffWithinItsSize(t *testing.T) {
	dir := t.TempDir()
	rootfs := filepath.Join(dir, "rootfs")
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		t.Fatal(err)
	}
	// A diff whose one file says it is 1 GiB: cut short, as a sparse
	// entry would be. The guard refuses it at its header.
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: "big", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	tw.Flush()
	arch := tarOf(t, []entry{{name: ConfigDumpFile, data: `{}`}, {name: RootFsDiffTar, data: b.String()}})
	p := filepath.Join(dir, "a.tar")
	if err := os.WriteFile(p, arch, 0o644); err != nil {
		t.Fatal(err)
	}
	err := Unpack(context.Background(), p, filepath.Join(dir, "images"), rootfs, snapshot.Limits{}, nil)
	if err == nil {
		t.Fatal("Unpack of a diff declaring more than it holds succeeded")
	}
	t.Logf("refused: %v", err)
	if _, err := os.Stat(filepath.Join(rootfs, "big")); err == nil {
		t.Errorf("the oversized file was written")
	}
}
