package mount

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestBindFDMountsTheOpenedObject(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "marker"), []byte("opened"), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(src, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	// Swap the name for a symlink elsewhere: the descriptor still holds
	// the directory that was opened.
	if err := os.Rename(src, filepath.Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", src); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := BindFD(fd, target); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := Unmount(target); err != nil {
			t.Error(err)
		}
	})
	b, err := os.ReadFile(filepath.Join(target, "marker"))
	if err != nil || string(b) != "opened" {
		t.Errorf("marker through the bind = %q, %v; want the opened directory's", b, err)
	}
	if err := BindFD(-1, target); err == nil {
		t.Error("BindFD(-1) succeeded")
	}
}
