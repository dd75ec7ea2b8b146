package netns

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/crib-dev/crib/internal/mount"
)

func requiresRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

func TestPinAndRemove(t *testing.T) {
	requiresRoot(t)
	dir := filepath.Join(t.TempDir(), "ns")
	paths, err := Pin(Request{Dir: dir, Kinds: []Kind{Net, IPC, UTS}, Hostname: "pod-host"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Remove(dir, nil) })

	// The pinning goroutine may have run on the main thread, which the Go
	// runtime then parks for good, so /proc/self is no reference: compare
	// with the namespaces of the thread running this test.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, k := range []Kind{Net, IPC, UTS} {
		var st, self unix.Stat_t
		if err := unix.Stat(paths[k], &st); err != nil {
			t.Fatalf("stat pinned %s: %v", k, err)
		}
		if err := unix.Stat("/proc/thread-self/ns/"+string(k), &self); err != nil {
			t.Fatal(err)
		}
		if st.Ino == self.Ino {
			t.Errorf("pinned %s namespace is the test's own", k)
		}
	}

	var up bool
	var addrs []net.Addr
	err = Do(paths[Net], func() error {
		lo, err := net.InterfaceByName("lo")
		if err != nil {
			return err
		}
		up = lo.Flags&net.FlagUp != 0
		ifs, err := net.Interfaces()
		if err != nil {
			return err
		}
		if len(ifs) != 1 {
			t.Errorf("interfaces in pod netns = %v, want only lo", ifs)
		}
		addrs, err = lo.Addrs()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !up || len(addrs) == 0 {
		t.Errorf("loopback up=%v addrs=%v, want up with addresses", up, addrs)
	}

	if err := Remove(dir, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("dir after Remove: %v", err)
	}
	if points, _ := mount.Under(dir); len(points) != 0 {
		t.Errorf("mounts left after Remove: %v", points)
	}
	if err := Remove(dir, nil); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}

func TestPinRollsBackOnError(t *testing.T) {
	requiresRoot(t)
	dir := filepath.Join(t.TempDir(), "ns")
	if _, err := Pin(Request{Dir: dir, Kinds: []Kind{Net, "bogus"}}); err == nil {
		t.Fatal("Pin with an unknown kind succeeded")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("dir after failed Pin: %v", err)
	}
}
