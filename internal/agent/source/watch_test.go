package source

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
)

// waitTimeout is generous: the assertions are about what arrives, never
// about how fast.
const waitTimeout = 15 * time.Second

type watchHarness struct {
	t    *testing.T
	out  chan Snapshot
	last *Snapshot
}

func startWatcher(t *testing.T, dir string, opts Options) *watchHarness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan Snapshot)
	done := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	w := NewWatcher(dir, opts, log)
	go func() { done <- w.Run(ctx, out) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(waitTimeout):
			t.Error("Run did not return after cancel")
		}
	})
	return &watchHarness{t: t, out: out}
}

// next receives one snapshot and checks that it differs from the one
// before it.
func (h *watchHarness) next(what string) Snapshot {
	h.t.Helper()
	select {
	case s := <-h.out:
		if h.last != nil && s.Equal(*h.last) {
			h.t.Errorf("watcher sent an unchanged snapshot (pods %v, errors %v)", podNames(s), errorMessages(s))
		}
		h.last = &s
		return s
	case <-time.After(waitTimeout):
		h.t.Fatalf("no snapshot while waiting for %s", what)
		return Snapshot{}
	}
}

// waitFor receives snapshots until one satisfies ok; editors and the
// debounce may show intermediate states first.
func (h *watchHarness) waitFor(what string, ok func(Snapshot) bool) Snapshot {
	h.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		if s := h.next(what); ok(s) {
			return s
		}
	}
	h.t.Fatalf("timed out waiting for %s; last pods %v, errors %v", what, podNames(*h.last), errorMessages(*h.last))
	return Snapshot{}
}

func hasPods(want ...string) func(Snapshot) bool {
	return func(s Snapshot) bool { return slices.Equal(podNames(s), want) }
}

func TestWatcherFollowsChanges(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", podYAML("a", "nginx:1"))
	h := startWatcher(t, dir, Options{NodeName: "n"})

	first := h.next("the initial snapshot")
	if diff := cmp.Diff([]string{"default/a"}, podNames(first)); diff != "" {
		t.Fatalf("initial pods (-want +got):\n%s", diff)
	}
	uid := first.Pods[0].UID

	// Edit in place.
	writeFile(t, dir, "a.yaml", podYAML("a", "nginx:2"))
	s := h.waitFor("the edit", func(s Snapshot) bool {
		return len(s.Pods) == 1 && s.Pods[0].Spec.Containers[0].Image == "nginx:2"
	})
	if s.Pods[0].UID != uid {
		t.Errorf("edit changed the uid %s -> %s", uid, s.Pods[0].UID)
	}

	// Write a temp file and rename it into place, as editors and
	// configuration tools do.
	tmp := writeFile(t, dir, ".#b.yaml", podYAML("b", "busybox"))
	if err := os.Rename(tmp, filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	h.waitFor("b.yaml renamed into place", hasPods("default/a", "default/b"))

	// Replace a file by rename (vim's backup dance): a.yaml -> a.yaml~,
	// then a new a.yaml.
	if err := os.Rename(filepath.Join(dir, "a.yaml"), filepath.Join(dir, "a.yaml~")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.yaml", podYAML("a", "nginx:3"))
	s = h.waitFor("a.yaml replaced", func(s Snapshot) bool {
		return hasPods("default/a", "default/b")(s) && s.Pods[0].Spec.Containers[0].Image == "nginx:3"
	})
	if s.Pods[0].UID != uid {
		t.Errorf("replacing the file changed the uid %s -> %s", uid, s.Pods[0].UID)
	}

	// A bad file among good ones.
	bad := writeFile(t, dir, "c.yaml", podYAML("c", "nginx")+"    imagee: typo\n")
	s = h.waitFor("c.yaml reported", func(s Snapshot) bool { return len(s.Errors) == 1 })
	if diff := cmp.Diff([]string{"default/a", "default/b"}, podNames(s)); diff != "" {
		t.Errorf("pods beside a bad file (-want +got):\n%s", diff)
	}
	mustContain(t, s.Errors[0].Error(), bad+`: pod "c": unknown field "spec.containers[0].imagee"`)

	// Fixing it brings its pod.
	writeFile(t, dir, "c.yaml", podYAML("c", "nginx"))
	h.waitFor("c.yaml fixed", func(s Snapshot) bool {
		return len(s.Errors) == 0 && hasPods("default/a", "default/b", "default/c")(s)
	})

	// Delete.
	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	h.waitFor("a.yaml deleted", hasPods("default/b", "default/c"))
}

func TestWatcherMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pods")
	h := startWatcher(t, dir, Options{})

	first := h.next("the initial snapshot")
	if len(first.Pods) != 0 || len(first.Errors) != 1 || !errdefs.IsNotFound(first.Errors[0]) {
		t.Fatalf("initial snapshot: pods %v errors %v", podNames(first), errorMessages(first))
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the watcher created the directory: %v", err)
	}

	// The directory appears with a pod in it at once ...
	staging := filepath.Join(filepath.Dir(dir), "staging")
	if err := os.Mkdir(staging, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, staging, "web.yaml", podYAML("web", "nginx"))
	if err := os.Rename(staging, dir); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the directory to appear", func(s Snapshot) bool { return len(s.Errors) == 0 && hasPods("default/web")(s) })

	// ... and is then watched.
	writeFile(t, dir, "two.yaml", podYAML("two", "nginx"))
	h.waitFor("a pod added to the new directory", hasPods("default/two", "default/web"))

	// It goes away, and comes back empty, then filled.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the directory to go", func(s Snapshot) bool {
		return len(s.Pods) == 0 && len(s.Errors) == 1 && errdefs.IsNotFound(s.Errors[0])
	})
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the directory to come back", func(s Snapshot) bool { return len(s.Errors) == 0 })
	writeFile(t, dir, "web.yaml", podYAML("web", "nginx"))
	h.waitFor("a pod in the recreated directory", hasPods("default/web"))
}

// A symlinked manifest's target changes without an event in the directory;
// the periodic rescan finds it.
func TestWatcherRescan(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "pods")
	elsewhere := filepath.Join(root, "elsewhere")
	for _, d := range []string{dir, elsewhere} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	target := writeFile(t, elsewhere, "web.yaml", podYAML("web", "nginx:1"))
	if err := os.Symlink(target, filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	h := startWatcher(t, dir, Options{RescanInterval: 200 * time.Millisecond})
	if s := h.next("the initial snapshot"); !hasPods("default/web")(s) {
		t.Fatalf("initial pods %v errors %v", podNames(s), errorMessages(s))
	}
	writeFile(t, elsewhere, "web.yaml", podYAML("web", "nginx:2"))
	h.waitFor("the rescan", func(s Snapshot) bool {
		return len(s.Pods) == 1 && s.Pods[0].Spec.Containers[0].Image == "nginx:2"
	})
}

func TestWatcherStopsWhileSending(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewWatcher(dir, Options{}, nil).Run(ctx, make(chan Snapshot)) }()
	cancel() // nobody ever receives the initial snapshot
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return")
	}
}

func TestWatcherBridgesFileReplacement(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", podYAML("a", "nginx:1"))
	h := startWatcher(t, dir, Options{NodeName: "n"})
	h.next("the initial snapshot")

	// The file vanishes and comes back with new content, as when an editor
	// renames it away and writes a new one: no snapshot may lose the pod.
	if err := os.Rename(filepath.Join(dir, "a.yaml"), filepath.Join(dir, "a.yaml~")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.yaml", podYAML("a", "nginx:2"))
	h.waitFor("the new content", func(s Snapshot) bool {
		if !hasPods("default/a")(s) {
			t.Fatalf("a snapshot lost the pod while its file was replaced: %v", podNames(s))
		}
		return s.Pods[0].Spec.Containers[0].Image == "nginx:2"
	})

	// A half-written (invalid) file keeps the pod as it was.
	writeFile(t, dir, "a.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n  - name: c\n    imagee: x\n")
	s := h.waitFor("the error", func(s Snapshot) bool { return len(s.Errors) == 1 })
	if !hasPods("default/a")(s) || s.Pods[0].Spec.Containers[0].Image != "nginx:2" {
		t.Errorf("a rejected file dropped or changed its pod: %v", podNames(s))
	}

	// A real deletion still removes the pod, once it has stayed gone.
	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the deletion", hasPods())
}
