package mount

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

func TestMountPointField(t *testing.T) {
	for line, want := range map[string]string{
		`36 35 98:0 /mnt1 /mnt/a\040b rw,noatime master:1 - ext3 /dev/root rw`: `/mnt/a\040b`,
		`22 1 0:21 / /proc rw shared:12 - proc proc rw`:                        `/proc`,
		`22 1 0:21 /`: "",
		``:            "",
	} {
		got, ok := mountPointField([]byte(line))
		if string(got) != want || ok != (want != "") {
			t.Errorf("mountPointField(%q) = %q, %v; want %q", line, got, ok, want)
		}
	}
}

// TestUnder: one reading of the mount table finds the mounts under each of
// several directories, a name with a space in it too, deepest first, and
// nothing under a directory that merely shares a prefix.
func TestUnder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	dir := t.TempDir()
	a, b, aa := filepath.Join(dir, "a"), filepath.Join(dir, "b c"), filepath.Join(dir, "a", "x")
	other := filepath.Join(dir, "ab")
	for _, p := range []string{a, b, other} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{a, b, other} {
		if err := unix.Mount("tmpfs", p, "tmpfs", 0, "size=64k"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Unmount(p, unix.MNT_DETACH) })
	}
	if err := os.Mkdir(aa, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", aa, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(aa, unix.MNT_DETACH) })

	got, err := Under(a+"/", b)
	if err != nil {
		t.Fatal(err)
	}
	sorted := slices.Sorted(slices.Values(got))
	if want := []string{a, aa, b}; !slices.Equal(sorted, want) {
		t.Errorf("Under = %q, want %q in any order", got, want)
	}
	if slices.Index(got, aa) > slices.Index(got, a) {
		t.Errorf("Under = %q: %s comes before the mount under it", got, a)
	}
	if err := UnmountUnder(a, b); err != nil {
		t.Fatal(err)
	}
	if got, _ := Under(dir); !slices.Equal(got, []string{other}) {
		t.Errorf("after UnmountUnder: %q mounted, want only %s", got, other)
	}
}
