package netns

import (
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// takeSpare takes a spare at target, waiting for one to be made.
func takeSpare(t *testing.T, s *Spares, target string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		took, err := s.Take(target, nil)
		if err != nil {
			t.Fatal(err)
		}
		if took {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no spare network namespace was made")
		}
	}
}

func TestSpareIsANewNetworkNamespaceWithLoopbackUp(t *testing.T) {
	requiresRoot(t)
	s := NewSpares(1, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(s.Close)
	dir := t.TempDir()
	first, second := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	t.Cleanup(func() { _ = Remove(dir, nil) })
	if took, err := s.Take(first, nil); took || err != nil {
		t.Fatalf("Take before Warm = %v, %v; want nothing", took, err)
	}
	if _, err := os.Stat(first); !os.IsNotExist(err) {
		t.Errorf("Take with no spare left %s: %v", first, err)
	}
	s.Warm()
	takeSpare(t, s, first)
	// The next one is made again: a second pod gets its own.
	s.Warm()
	takeSpare(t, s, second)

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var a, b, self unix.Stat_t
	for path, st := range map[string]*unix.Stat_t{first: &a, second: &b, "/proc/thread-self/ns/net": &self} {
		if err := unix.Stat(path, st); err != nil {
			t.Fatal(err)
		}
	}
	if a.Ino == self.Ino || b.Ino == self.Ino || a.Ino == b.Ino {
		t.Errorf("namespace inodes: spares %d and %d, the test's %d; want three", a.Ino, b.Ino, self.Ino)
	}
	err := Do(first, func() error {
		lo, err := net.InterfaceByName("lo")
		if err != nil {
			return err
		}
		if lo.Flags&net.FlagUp == 0 {
			t.Errorf("loopback in a spare is down")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSparesTakeNothingOnceClosed(t *testing.T) {
	requiresRoot(t)
	s := NewSpares(1, slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.Warm()
	s.Close()
	target := filepath.Join(t.TempDir(), "net")
	if took, err := s.Take(target, nil); took || err != nil {
		t.Fatalf("Take after Close = %v, %v; want nothing", took, err)
	}
	// Nor does Warm start making one.
	s.Warm()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ready) != 0 || s.filling {
		t.Errorf("after Close: %d spares ready, filling %v", len(s.ready), s.filling)
	}
}
