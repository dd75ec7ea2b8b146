package mount

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// userNamespace starts a process in a new user namespace mapping 0..65535
// to host ids from base and returns its namespace, open.
func userNamespace(t *testing.T, base int) *os.File {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	m := []syscall.SysProcIDMap{{ContainerID: 0, HostID: base, Size: 1 << 16}}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER, UidMappings: m, GidMappings: m}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func owner(t *testing.T, path string) uint32 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Uid
}

// requiresIDMappedOverlay skips a test on a kernel without overlays of
// id-mapped layers given one by one (Linux 6.8).
func requiresIDMappedOverlay(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		t.Fatal(err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(uts.Release[:]), "%d.%d", &major, &minor); err != nil {
		t.Fatal(err)
	}
	if major < 6 || (major == 6 && minor < 8) {
		t.Skipf("kernel %d.%d has no lowerdir+ for overlays of id-mapped layers (6.8 has)", major, minor)
	}
}

func TestIDMappedOverlay(t *testing.T) {
	requiresIDMappedOverlay(t)
	dir := t.TempDir()
	for _, d := range []string{"lower1", "lower2", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Layer files owned by the host's root and by an id inside the range.
	if err := os.WriteFile(filepath.Join(dir, "lower1", "root-file"), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lower2", "user-file"), []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(filepath.Join(dir, "lower2", "user-file"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	const base = 5 << 16
	merged, scratch := filepath.Join(dir, "merged"), filepath.Join(dir, "mapped")
	err := IDMappedOverlay([]string{filepath.Join(dir, "lower1"), filepath.Join(dir, "lower2")},
		filepath.Join(dir, "upper"), filepath.Join(dir, "work"), merged, scratch, userNamespace(t, base))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Unmount(merged) })

	if got := owner(t, filepath.Join(merged, "root-file")); got != base {
		t.Errorf("a layer's root file is owned by %d in the overlay, want %d", got, base)
	}
	if got := owner(t, filepath.Join(merged, "user-file")); got != base+1000 {
		t.Errorf("a layer's uid-1000 file is owned by %d in the overlay, want %d", got, base+1000)
	}
	if got := owner(t, filepath.Join(dir, "lower1", "root-file")); got != 0 {
		t.Errorf("the layer itself changed: its file is owned by %d", got)
	}
	if _, err := os.Stat(scratch); !os.IsNotExist(err) {
		t.Errorf("the scratch dir of the mapped layers is still there: %v", err)
	}
	points, err := Under(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 1 || points[0] != merged {
		t.Errorf("mounts under the test dir = %v, want only the overlay", points)
	}
}

func TestProbeIDMappedOverlayRemovesAnEarlierProbe(t *testing.T) {
	requiresIDMappedOverlay(t)
	dir := t.TempDir()
	// A probe a crash interrupted: its scratch, with a mount in it.
	stale := filepath.Join(dir, ".idmap-probe-1")
	if err := os.MkdirAll(filepath.Join(stale, "merged"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := (Mount{Type: "tmpfs", Source: "tmpfs"}).Mount(filepath.Join(stale, "merged")); err != nil {
		t.Fatal(err)
	}
	if err := ProbeIDMappedOverlay(dir, userNamespace(t, 6<<16)); err != nil {
		t.Fatalf("probe on this kernel: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("the probe left %v", entries)
	}
	if points, _ := Under(dir); len(points) != 0 {
		t.Errorf("the probe left mounts %v", points)
	}
}
