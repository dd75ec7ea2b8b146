package kernelstats

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/errdefs"
)

func TestDisk(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"a":     string(make([]byte, 10000)),
		"sub/b": "hello",
	})
	if err := os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "sub", "a-link")); err != nil {
		t.Fatal(err)
	}
	u, err := Disk(context.Background(), dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	// dir, a, sub, sub/b: the hard link is the same inode as a.
	if u.Inodes != 4 || u.Partial {
		t.Errorf("Disk = %+v, want 4 inodes, complete", u)
	}
	if u.Bytes < 10000 {
		t.Errorf("Disk bytes = %d, want at least the 10000 written", u.Bytes)
	}

	bounded, err := Disk(context.Background(), dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !bounded.Partial || bounded.Inodes != 2 {
		t.Errorf("bounded Disk = %+v, want 2 inodes, partial", bounded)
	}

	if _, err := Disk(context.Background(), filepath.Join(dir, "none"), 0); !errdefs.IsNotFound(err) {
		t.Errorf("Disk of a missing dir = %v, want not found", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Disk(ctx, dir, 0); err == nil {
		t.Error("Disk with a cancelled context succeeded")
	}
}
