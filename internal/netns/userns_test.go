package netns

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// owner is the inode of the user namespace that owns the namespace at path
// (req NS_GET_USERNS), or of its parent (NS_GET_PARENT, for a user
// namespace).
func owner(t *testing.T, path string, req uint) uint64 {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	ofd, err := unix.IoctlRetInt(fd, req)
	if err != nil {
		t.Fatalf("ioctl %#x on %s: %v", req, path, err)
	}
	defer unix.Close(ofd)
	var st unix.Stat_t
	if err := unix.Fstat(ofd, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// TestPinInNamespacesAreOwnedByThePodsUserNamespace: the namespaces PinIn
// makes belong to the user namespace it makes, a child of the host's. The
// pod's root administers them (namespaced sysctls, its network), and only
// a process in that user namespace, or with privileges over it, can enter
// them: not one in a user namespace of its own, as CRIU's restore makes
// (see internal/container's refusal of such a restore).
func TestPinInNamespacesAreOwnedByThePodsUserNamespace(t *testing.T) {
	requiresRoot(t)
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep binary")
	}
	dir := filepath.Join(t.TempDir(), "ns")
	m := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 41 << 16, Size: 65536}}
	cmd := exec.Command("sleep", "60")
	paths, err := PinIn(cmd, UserNS{UIDs: m, GIDs: m}, Request{Dir: dir, Kinds: []Kind{Net, IPC, UTS}, Hostname: "pod-host"})
	if err != nil {
		t.Fatal(err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	t.Cleanup(func() { _ = Remove(dir, nil) })

	userns := inode(t, paths[User])
	if userns == inode(t, "/proc/self/ns/user") {
		t.Fatal("the pinned user namespace is the host's")
	}
	if got, want := owner(t, paths[User], unix.NS_GET_PARENT), inode(t, "/proc/self/ns/user"); got != want {
		t.Errorf("parent of the pod's user namespace: %d, want the host's %d", got, want)
	}
	for _, k := range []Kind{Net, IPC, UTS} {
		if got := owner(t, paths[k], unix.NS_GET_USERNS); got != userns {
			t.Errorf("%s namespace owned by user namespace %d, want the pod's %d", k, got, userns)
		}
	}
}
