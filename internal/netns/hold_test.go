package netns

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/crib-dev/crib/internal/mount"

	"github.com/crib-dev/crib/internal/nshold"
)

// holder runs a namespace holder in this process and returns a client.
func holder(t *testing.T) *nshold.Client {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "hold.sock")
	ln, err := nshold.Listen(socket)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = nshold.NewHolder(slog.New(slog.NewTextHandler(io.Discard, nil))).Serve(ln) }()
	c, err := nshold.Dial(socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// A holder ends once a drop empties it (the daemon's connection then
	// starts a new one); this one keeps a descriptor of no pod, so that a
	// test's Removes all find it.
	keep, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	if _, err := c.Put("keep", int(keep.Fd())); err != nil {
		t.Fatal(err)
	}
	return c
}

// heldUnder is what the holder holds for keys under dir.
func heldUnder(t *testing.T, hold *nshold.Client, dir string) []string {
	t.Helper()
	held, err := hold.List()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range held {
		if strings.HasPrefix(k, dir+"/") {
			keys = append(keys, k)
		}
	}
	return keys
}

// noMountsUnder fails the test if anything is mounted at or under dir.
// (Not a count of the host's mounts: tests of other packages mount and
// unmount meanwhile.)
func noMountsUnder(t *testing.T, dir string) {
	t.Helper()
	points, err := mount.Under(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 0 {
		t.Errorf("mounted under %s: %v, want nothing", dir, points)
	}
}

// Held pins are links to the holder's descriptors: the namespaces are the
// pod's, set up as bind-mounted ones are, and the host's mount table does
// not grow.
func TestPinHeld(t *testing.T) {
	requiresRoot(t)
	hold := holder(t)
	dir := filepath.Join(t.TempDir(), "ns")
	paths, err := Pin(Request{Dir: dir, Kinds: []Kind{Net, IPC, UTS}, Hostname: "held-pod", Hold: hold})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Remove(dir, hold) })
	noMountsUnder(t, dir)
	for _, k := range []Kind{Net, IPC, UTS} {
		link, err := os.Readlink(paths[k])
		if err != nil || !strings.HasPrefix(link, "/proc/") {
			t.Errorf("%s pin %s: link %q, %v; want a link to the holder", k, paths[k], link, err)
		}
		if pinned, err := IsPinned(paths[k]); err != nil || !pinned {
			t.Errorf("IsPinned(%s) = %v, %v", paths[k], pinned, err)
		}
	}
	var hostname string
	err = Do(paths[Net], func() error {
		f, err := os.Open(paths[UTS])
		if err != nil {
			return err
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWUTS); err != nil {
			return err
		}
		var u unix.Utsname
		if err := unix.Uname(&u); err != nil {
			return err
		}
		hostname = unix.ByteSliceToString(u.Nodename[:])
		return nil
	})
	if err != nil || hostname != "held-pod" {
		t.Errorf("hostname in the held UTS namespace %q, %v; want held-pod", hostname, err)
	}

	if err := Remove(dir, hold); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("dir after Remove: %v", err)
	}
	if held := heldUnder(t, hold, dir); len(held) != 0 {
		t.Errorf("the holder keeps %v after Remove", held)
	}
	if err := Remove(dir, hold); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}

// A plain file where a pin should be (a creation that died before it
// pinned) or a link whose holder dropped it is not a pinned namespace.
func TestIsPinnedRefusesWhatIsNot(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "net")
	if err := os.WriteFile(plain, nil, 0o400); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "gone")
	if err := os.Symlink("/proc/self/fd/987654", dangling); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{plain, dangling, filepath.Join(dir, "absent")} {
		if pinned, err := IsPinned(p); err != nil || pinned {
			t.Errorf("IsPinned(%s) = %v, %v; want false", p, pinned, err)
		}
	}
	if pinned, err := IsPinned("/proc/self/ns/net"); err != nil || !pinned {
		t.Errorf("IsPinned(/proc/self/ns/net) = %v, %v; want true", pinned, err)
	}
}

// A spare network namespace taken with a holder is held, not mounted.
func TestSpareTakenHeld(t *testing.T) {
	requiresRoot(t)
	hold := holder(t)
	s := NewSpares(1, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer s.Close()
	s.refill()
	s.fills.Wait()
	dir := filepath.Join(t.TempDir(), "ns")
	paths, err := s.Pin(Request{Dir: dir, Kinds: []Kind{Net, IPC}, Hold: hold})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = Remove(dir, hold) }()
	noMountsUnder(t, dir)
	if held := heldUnder(t, hold, dir); len(held) != 2 {
		t.Errorf("held for the pod: %v, want its net and ipc", held)
	}
	if pinned, err := IsPinned(paths[Net]); err != nil || !pinned {
		t.Errorf("IsPinned(net) = %v, %v", pinned, err)
	}
}

// Repin moves a pin to another holder: the link then opens the same
// namespace through the new holder, and outlives the old one dropping it.
func TestRepinMovesAPinToAnotherHolder(t *testing.T) {
	requiresRoot(t)
	first, second := holder(t), holder(t)
	dir := filepath.Join(t.TempDir(), "ns")
	paths, err := Pin(Request{Dir: dir, Kinds: []Kind{Net}, Hold: first})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Remove(dir, first); _ = Remove(dir, second) })
	var before, after unix.Stat_t
	if err := unix.Stat(paths[Net], &before); err != nil {
		t.Fatal(err)
	}
	if err := Repin(second, paths[Net], paths[Net]); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Drop(dir + "/"); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(paths[Net], &after); err != nil {
		t.Fatalf("the repinned link does not open once the first holder dropped it: %v", err)
	}
	if after.Ino != before.Ino || after.Dev != before.Dev {
		t.Errorf("the repinned link opens namespace %d, was %d", after.Ino, before.Ino)
	}
	if held := heldUnder(t, second, dir); len(held) != 1 {
		t.Errorf("the second holder holds %v for the pod, want its net", held)
	}
	if leftover, _ := filepath.Glob(filepath.Join(dir, "*.new")); len(leftover) != 0 {
		t.Errorf("Repin left %v", leftover)
	}
}
