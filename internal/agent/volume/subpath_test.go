package volume

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/mount"
)

// subPathPod prepares a pod with one disk emptyDir "data" and one
// configMap "conf" (key "app.yaml") and returns the volumes' host paths.
func subPathPod(t *testing.T, m *Manager, uid string) map[string]string {
	t.Helper()
	removeAtCleanup(t, m, uid)
	pod := testPod(uid,
		vol("data", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
		vol("conf", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}),
	)
	paths, err := m.Prepare(context.Background(), pod, configMap("cfg", map[string]string{"app.yaml": "port: 80\n"}, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

func TestPrepareSubPathRefusesEscapes(t *testing.T) {
	requireRoot(t)
	m, root := newTestManager(t)
	data := subPathPod(t, m, "uid-evil")["data"]
	outside := t.TempDir()
	// What a container that writes into its emptyDir could plant.
	for link, to := range map[string]string{
		"evil":         "/",
		"rel":          "../../../../..",
		"dangling":     "does-not-exist",
		"out":          outside,
		"deep/evil":    "/etc",
		"deep/reldeep": "../../../..",
	} {
		p := filepath.Join(data, link)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(data, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{
		"evil", "evil/etc", "./evil", "deep/evil", "rel", "rel/etc", "deep/reldeep", "out", "out/new",
		"dangling", "file/below",
		"..", "../x", "a/../../x", "a/..", "/etc", "/", "", "a\x00b",
	} {
		t.Run(strings.ReplaceAll(sub, "/", "|"), func(t *testing.T) {
			got, err := m.PrepareSubPath("uid-evil", "data", data, sub, "app", 0)
			wantErrClass(t, err, errdefs.ErrInvalidArgument, `volume "data"`, "subPath")
			if !strings.Contains(err.Error(), strings.ReplaceAll(sub, "\x00", `\x00`)) {
				t.Errorf("error %q does not name the subPath %q", err, sub)
			}
			if got != "" {
				t.Errorf("returned path %q with the error", got)
			}
		})
	}
	if left, _ := mount.Under(root); len(left) != 0 {
		t.Errorf("refused subPaths left mounts %v", left)
	}
	if names := entries(t, outside); len(names) != 0 {
		t.Errorf("something was created outside the volume: %v", names)
	}
	if _, err := os.Lstat("/new"); err == nil {
		t.Errorf("/new exists")
	}
}

func TestPrepareSubPathCreatesMissingDirectories(t *testing.T) {
	requireRoot(t)
	m, root := newTestManager(t)
	data := subPathPod(t, m, "uid-mkdir")["data"]
	target, err := m.PrepareSubPath("uid-mkdir", "data", data, "a/b/c", "app", 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "uid-mkdir", "volume-subpaths", "data", "app", "2"); target != want {
		t.Errorf("target %q, want %q", target, want)
	}
	for _, d := range []string{"a", "a/b", "a/b/c"} {
		// An emptyDir is 0777, so are the directories made in it.
		if got := perm(t, filepath.Join(data, d)); got != 0o777 {
			t.Errorf("%s: mode %v, want 0777 like the volume", d, got)
		}
	}
	if n := len(mountsAt(t, target)); n != 1 {
		t.Fatalf("%d mounts on %s, want 1", n, target)
	}
	if err := os.WriteFile(filepath.Join(target, "through"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(data, "a/b/c/through")); got != "x" {
		t.Errorf("file written through the mount reads %q in the volume", got)
	}

	// A symlink that stays inside the volume is followed, and what is
	// missing behind it is made there.
	if err := os.Symlink("a/b", filepath.Join(data, "inside")); err != nil {
		t.Fatal(err)
	}
	target, err = m.PrepareSubPath("uid-mkdir", "data", data, "inside/logs/app", "app", 3)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(data, "a/b/logs/app")); err != nil || !fi.IsDir() {
		t.Errorf("a/b/logs/app behind the symlink: %v, %v", fi, err)
	}
	if n := len(mountsAt(t, target)); n != 1 {
		t.Errorf("%d mounts on %s, want 1", n, target)
	}
}

func TestPrepareSubPathFile(t *testing.T) {
	requireRoot(t)
	m, _ := newTestManager(t)
	paths := subPathPod(t, m, "uid-file")
	data := paths["data"]
	if err := os.WriteFile(filepath.Join(data, "app.log"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	target, err := m.PrepareSubPath("uid-file", "data", data, "app.log", "app", 0)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(target); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("target %s: %v, %v; want a regular file", target, fi, err)
	}
	if err := os.WriteFile(target, []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(data, "app.log")); got != "new\n" {
		t.Errorf("volume file reads %q after a write through the mount", got)
	}

	// A configMap key is a symlink through ..data inside the volume.
	target, err = m.PrepareSubPath("uid-file", "conf", paths["conf"], "app.yaml", "app", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, target); got != "port: 80\n" {
		t.Errorf("configMap key through the mount reads %q", got)
	}
	if n := len(mountsAt(t, target)); n != 1 {
		t.Errorf("%d mounts on %s, want 1", n, target)
	}
}

func TestPrepareSubPathReplacesNeverStacks(t *testing.T) {
	requireRoot(t)
	m, root := newTestManager(t)
	data := subPathPod(t, m, "uid-again")["data"]
	for _, d := range []string{"one", "two"} {
		if err := os.MkdirAll(filepath.Join(data, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, d, "name"), []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(data, "three"), []byte("three"), 0o644); err != nil {
		t.Fatal(err)
	}
	steps := []struct{ sub, file string }{
		{"one", "name"}, {"one", "name"}, // the same object: the mount is kept
		{"two", "name"}, // the container now wants another directory
		{"three", ""},   // and now a file at the same index
		{"one", "name"}, // and a directory again
	}
	var target string
	for i, s := range steps {
		got, err := m.PrepareSubPath("uid-again", "data", data, s.sub, "app", 0)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if target != "" && got != target {
			t.Errorf("step %d: target moved from %q to %q", i, target, got)
		}
		target = got
		if n := len(mountsAt(t, target)); n != 1 {
			t.Errorf("step %d (%s): %d mounts on the target, want 1", i, s.sub, n)
		}
		if got := readFile(t, filepath.Join(target, s.file)); got != s.sub {
			t.Errorf("step %d: target shows %q, want %q", i, got, s.sub)
		}
	}
	// Another container, or another index, gets its own mount.
	other, err := m.PrepareSubPath("uid-again", "data", data, "one", "sidecar", 0)
	if err != nil || other == target {
		t.Fatalf("sidecar: %q, %v", other, err)
	}
	if left, _ := mount.Under(filepath.Join(root, "uid-again")); len(left) != 2 {
		t.Errorf("mounts under the pod %v, want the two subPath mounts", left)
	}
	if err := m.Remove(context.Background(), "uid-again"); err != nil {
		t.Fatal(err)
	}
	if left, _ := mount.Under(root); len(left) != 0 {
		t.Errorf("mounts left after Remove: %v", left)
	}
	if _, err := os.Lstat(filepath.Join(root, "uid-again")); !os.IsNotExist(err) {
		t.Errorf("pod directory after Remove: %v", err)
	}
}

func TestPrepareSubPathValidatesNames(t *testing.T) {
	m, _ := newTestManager(t)
	dir := t.TempDir()
	for _, tt := range []struct {
		uid, volume, path, container string
		index                        int
	}{
		{"..", "data", dir, "app", 0},
		{"u", "a/b", dir, "app", 0},
		{"u", "data", dir, "../app", 0},
		{"u", "data", dir, "app", -1},
		{"u", "data", "relative/dir", "app", 0},
	} {
		if _, err := m.PrepareSubPath(tt.uid, tt.volume, tt.path, "x", tt.container, tt.index); !errdefs.IsInvalidArgument(err) {
			t.Errorf("PrepareSubPath(%+v) = %v, want invalid argument", tt, err)
		}
	}
}

func TestOpenNoFollowRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/", filepath.Join(dir, "evil")); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	// The name check resolveInVolume makes can be raced: a directory
	// swapped for a symlink after it must still be refused here.
	if got, err := openNoFollow(fd, "evil"); !errdefs.IsInvalidArgument(err) {
		if got >= 0 {
			unix.Close(got)
		}
		t.Errorf("openNoFollow of a symlink = %d, %v; want invalid argument", got, err)
	}
	if got, err := makeDirAt(fd, "evil", 0o755); !errdefs.IsInvalidArgument(err) {
		if got >= 0 {
			unix.Close(got)
		}
		t.Errorf("makeDirAt over a symlink = %d, %v; want invalid argument", got, err)
	}
}
