package mount

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestUnmountTree: walking a directory unmounts what is mounted in it, at
// any depth, on a file too, stacked and uncovered by another unmount, and
// never deletes or enters what a mount holds; a sibling that only shares
// the name's prefix and a symlink out of the tree are left alone.
func TestUnmountTree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	dir := t.TempDir()
	tree := filepath.Join(dir, "tree")
	outside := filepath.Join(dir, "tree-sibling")
	mkdir := func(p string) {
		t.Helper()
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tmpfs := func(p string) {
		t.Helper()
		if err := unix.Mount("tmpfs", p, "tmpfs", 0, "size=64k"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = Unmount(p) })
	}
	mkdir(filepath.Join(tree, "a", "deep"))
	mkdir(outside)
	tmpfs(outside)
	// A mount below a directory that is then mounted over: seen only
	// once the upper one is gone.
	tmpfs(filepath.Join(tree, "a", "deep"))
	tmpfs(filepath.Join(tree, "a"))
	// Two mounts stacked on one point, one with a mount in it.
	stacked := filepath.Join(tree, "stacked")
	mkdir(stacked)
	tmpfs(stacked)
	tmpfs(stacked)
	mkdir(filepath.Join(stacked, "in"))
	tmpfs(filepath.Join(stacked, "in"))
	// A namespace pinned on a file, as netns pins one.
	pin := filepath.Join(tree, "ns", "ipc")
	mkdir(filepath.Dir(pin))
	if err := os.WriteFile(pin, nil, 0o400); err != nil {
		t.Fatal(err)
	}
	if err := Bind("/proc/self/ns/ipc", pin); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Unmount(pin) })
	// What a mount holds stays: the walk must not delete into it.
	held := filepath.Join(outside, "keep")
	if err := os.WriteFile(held, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(tree, "link")); err != nil {
		t.Fatal(err)
	}

	if err := UnmountTree(tree, filepath.Join(dir, "missing")); err != nil {
		t.Fatal(err)
	}
	left, err := Under(tree)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("mounts left under %s: %q", tree, left)
	}
	if mounted, err := IsMountPoint(outside); err != nil || !mounted {
		t.Errorf("IsMountPoint(%s) = %v, %v after walking its prefix's tree; want it mounted still", outside, mounted, err)
	}
	if _, err := os.Stat(held); err != nil {
		t.Errorf("a file of a mount out of the tree: %v", err)
	}
}

// TestIsMountPoint: a mount's root, a file bound on, neither a plain
// directory nor one below a mount, and a missing path is none.
func TestIsMountPoint(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	dir := t.TempDir()
	m, file := filepath.Join(dir, "m"), filepath.Join(dir, "f")
	if err := os.Mkdir(m, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", m, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Unmount(m) })
	if err := os.Mkdir(filepath.Join(m, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Bind("/proc/self/ns/net", file); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Unmount(file) })
	for path, want := range map[string]bool{
		m: true, m + "/": true, file: true,
		dir: false, filepath.Join(m, "sub"): false, filepath.Join(dir, "missing"): false,
	} {
		if got, err := IsMountPoint(path); err != nil || got != want {
			t.Errorf("IsMountPoint(%s) = %v, %v; want %v", path, got, err, want)
		}
	}
}

// TestUnmountTreeDeep: a directory tree deeper than PATH_MAX, as a
// container can make in its writable layer (under its bundle), is walked
// without ENAMETOOLONG: it must not make the container's teardown fail
// for good. A mount in it, at a path of ordinary length, still goes.
func TestUnmountTreeDeep(t *testing.T) {
	dir := t.TempDir()
	name := strings.Repeat("d", 200)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ { // 30 × 201 bytes: beyond PATH_MAX (4096)
		if err := unix.Mkdirat(fd, name, 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	unix.Close(fd)
	if os.Geteuid() == 0 {
		shallow := filepath.Join(dir, "m")
		if err := os.Mkdir(shallow, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", shallow, "tmpfs", 0, "size=64k"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = Unmount(shallow) })
		defer func() {
			if root, _, _ := isMountRoot(shallow); root {
				t.Errorf("%s is still mounted", shallow)
			}
		}()
	}
	if err := UnmountTree(dir); err != nil {
		t.Fatalf("UnmountTree of a deep tree: %v", err)
	}
}
