package volume

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/mount"
)

func TestRemoveAfterPartialPrepare(t *testing.T) {
	requireRoot(t)
	m, root := newTestManager(t)
	ctx := context.Background()
	pod := testPod("uid-partial",
		vol("shm", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}),
		vol("creds", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db"}}),
		vol("conf", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}}}),
	)
	secrets := map[string]*corev1.Secret{"default/db": {Data: map[string][]byte{"k": []byte("v")}}}
	_, err := m.Prepare(ctx, pod, nil, secrets)
	wantErrClass(t, err, errdefs.ErrNotFound, `"conf"`)
	podDir := filepath.Join(root, "uid-partial")
	if left, _ := mount.Under(podDir); len(left) != 2 {
		t.Fatalf("partial Prepare left mounts %v, want the two tmpfs", left)
	}
	for range 2 {
		if err := m.Remove(ctx, "uid-partial"); err != nil {
			t.Fatalf("Remove: %v", err)
		}
	}
	if left, _ := mount.Under(root); len(left) != 0 {
		t.Errorf("mounts left after Remove: %v", left)
	}
	if _, err := os.Lstat(podDir); !os.IsNotExist(err) {
		t.Errorf("pod dir still there after Remove: %v", err)
	}
}

func TestRemoveDoesNotFollowSymlinks(t *testing.T) {
	m, _ := newTestManager(t)
	ctx := context.Background()
	vols := []corev1.Volume{vol("disk", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}})}
	if os.Geteuid() == 0 {
		vols = append(vols, vol("mem", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}))
	}
	pod := testPod("uid-hostile", vols...)
	paths, err := m.Prepare(ctx, pod, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	precious := filepath.Join(outside, "precious")
	if err := os.WriteFile(precious, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	// What a hostile container could plant in its emptyDirs: links to a
	// host directory and to a host file, at the top and deeper down.
	for _, dir := range paths {
		if err := os.Symlink(outside, filepath.Join(dir, "escape-dir")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(precious, filepath.Join(dir, "escape-file")); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(dir, "sub", "escape")); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Remove(ctx, "uid-hostile"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, precious); got != "keep me" {
		t.Errorf("outside file now %q", got)
	}
	if names := entries(t, outside); len(names) != 1 {
		t.Errorf("outside dir now holds %v", names)
	}
}

func TestRemoveValidatesAndTolerates(t *testing.T) {
	m, root := newTestManager(t)
	ctx := context.Background()
	if err := m.Remove(ctx, "never-existed"); err != nil {
		t.Errorf("Remove of an unknown pod with no root: %v", err)
	}
	for _, uid := range []string{"", ".", "..", "a/b", "../etc"} {
		if err := m.Remove(ctx, uid); !errdefs.IsInvalidArgument(err) {
			t.Errorf("Remove(%q) = %v, want invalid argument", uid, err)
		}
	}
	// A plain file where a pod dir would be (nothing we made) is unlinked.
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "stray"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(ctx, "stray"); err != nil {
		t.Errorf("Remove of a stray file: %v", err)
	}
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	if err := m.Remove(ctx2, "x"); err == nil {
		t.Error("Remove with a cancelled context succeeded")
	}
}

func TestRootBehindSymlink(t *testing.T) {
	requireRoot(t)
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	m := New(Config{Root: filepath.Join(base, "link")}, nil)
	t.Cleanup(func() { _ = mount.UnmountUnder(real) })
	pod := testPod("uid-link", vol("shm", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}))
	for range 2 {
		if _, err := m.Prepare(context.Background(), pod, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if left, _ := mount.Under(real); len(left) != 1 {
		t.Errorf("mounts under the real root %v, want exactly one tmpfs", left)
	}
	if err := m.Remove(context.Background(), "uid-link"); err != nil {
		t.Fatal(err)
	}
	if left, _ := mount.Under(real); len(left) != 0 {
		t.Errorf("mounts left %v", left)
	}
}

func TestPods(t *testing.T) {
	m, root := newTestManager(t)
	if got, err := m.Pods(); err != nil || len(got) != 0 {
		t.Errorf("Pods with no root = %v, %v; want none", got, err)
	}
	for _, uid := range []string{"b", "a"} {
		removeAtCleanup(t, m, uid)
		if _, err := m.Prepare(context.Background(), testPod(uid), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "not-a-pod"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := m.Pods()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	if diff := cmp.Diff([]string{"a", "b"}, got); diff != "" {
		t.Errorf("Pods (-want +got):\n%s", diff)
	}
}

func TestTerminationMessagePath(t *testing.T) {
	m, root := newTestManager(t)
	removeAtCleanup(t, m, "uid-term")
	p, err := m.TerminationMessagePath("uid-term", "app", 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "uid-term", "containers", "app", "3", "termination-log"); p != want {
		t.Errorf("path %q, want %q", p, want)
	}
	if got := perm(t, p); got != 0o666 {
		t.Errorf("mode %v, want 0666", got)
	}
	if err := os.WriteFile(p, []byte("bye"), 0o666); err != nil {
		t.Fatal(err)
	}
	again, err := m.TerminationMessagePath("uid-term", "app", 3)
	if err != nil || again != p {
		t.Fatalf("second call = %q, %v", again, err)
	}
	if got := readFile(t, p); got != "bye" {
		t.Errorf("second call lost the message: %q", got)
	}
	next, err := m.TerminationMessagePath("uid-term", "app", 4)
	if err != nil || next == p {
		t.Fatalf("next restart = %q, %v; want a new file", next, err)
	}
	for _, bad := range [][2]string{{"uid-term", "../x"}, {"..", "app"}, {"uid-term", ""}} {
		if _, err := m.TerminationMessagePath(bad[0], bad[1], 0); !errdefs.IsInvalidArgument(err) {
			t.Errorf("TerminationMessagePath(%q, %q) = %v, want invalid argument", bad[0], bad[1], err)
		}
	}
}
