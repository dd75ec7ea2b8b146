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
		`device /dev/root mounted on /mnt/a\040b with fstype ext3`:         `/mnt/a\040b`,
		`device proc mounted on /proc with fstype proc`:                    `/proc`,
		`no device mounted on /x with fstype y`:                            `/x`,
		`device srv:/export mounted on /nfs with fstype nfs4 statvers=1.1`: `/nfs`,
		`	opts:	rw,vers=4.2`:  "",
		`device a mounted on`: "",
		``:                    "",
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
