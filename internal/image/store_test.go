package image

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	"github.com/opencontainers/go-digest"
)

// hubStore returns a store whose docker.io is served by a loopback mirror
// holding library/busybox:latest, library/busybox:1.36 (same image) and
// foo/bar:latest (another image).
func hubStore(t *testing.T, root string) (*Store, *testRegistry) {
	t.Helper()
	reg := newRegistry(t)
	busybox := testImage(t, "amd64", "busybox")
	reg.push(t, "library/busybox:latest", busybox)
	reg.push(t, "library/busybox:1.36", busybox)
	reg.push(t, "foo/bar:latest", testImage(t, "amd64", "foobar"))
	return openStore(t, root, Config{Registries: map[string]Registry{
		"docker.io": {Mirrors: []string{"http://" + reg.host}},
	}}), reg
}

func pullAll(t *testing.T, s *Store, refs ...string) []Image {
	t.Helper()
	var out []Image
	for _, r := range refs {
		img, err := s.Pull(context.Background(), r, Auth{})
		if err != nil {
			t.Fatalf("pull %s: %v", r, err)
		}
		out = append(out, img)
	}
	return out
}

func TestTwoTagsOneImageAndResolve(t *testing.T) {
	requiresRoot(t)
	s, _ := hubStore(t, t.TempDir())
	imgs := pullAll(t, s, "busybox", "docker.io/library/busybox:1.36", "foo/bar")
	if imgs[0].ID != imgs[1].ID {
		t.Fatalf("two tags gave two images: %s %s", imgs[0].ID, imgs[1].ID)
	}
	bb, err := s.Resolve("busybox")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"docker.io/library/busybox:latest", "docker.io/library/busybox:1.36"}, bb.RepoTags); diff != "" {
		t.Errorf("RepoTags (-want +got):\n%s", diff)
	}
	if len(s.List()) != 2 {
		t.Errorf("List has %d images, want 2", len(s.List()))
	}
	hex := strings.TrimPrefix(bb.ID, "sha256:")
	tests := []struct {
		ref    string
		wantID string
		err    error
	}{
		{"busybox", bb.ID, nil},
		{"busybox:latest", bb.ID, nil},
		{"busybox:1.36", bb.ID, nil},
		{"library/busybox", bb.ID, nil},
		{"docker.io/busybox", bb.ID, nil},
		{"index.docker.io/library/busybox:latest", bb.ID, nil},
		{"docker.io/library/busybox@" + strings.TrimPrefix(bb.RepoDigests[0], "docker.io/library/busybox@"), bb.ID, nil},
		{bb.ID, bb.ID, nil},
		{hex, bb.ID, nil},
		{hex[:12], bb.ID, nil},
		{"sha256:" + hex[:12], bb.ID, nil},
		{"foo/bar", imgs[2].ID, nil},
		{"busybox:2", "", errdefs.ErrNotFound},
		{"sha256:" + strings.Repeat("0", 64), "", errdefs.ErrNotFound},
		{hex[:11], "", errdefs.ErrNotFound}, // too short for an id prefix: a name
		{"", "", errdefs.ErrInvalidArgument},
	}
	for _, tc := range tests {
		got, err := s.Resolve(tc.ref)
		if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
			t.Errorf("Resolve(%q) error = %v, want %v", tc.ref, err, tc.err)
			continue
		}
		if got.ID != tc.wantID {
			t.Errorf("Resolve(%q) = %s, want %s", tc.ref, got.ID, tc.wantID)
		}
	}
}

func TestRemove(t *testing.T) {
	requiresRoot(t)
	root := t.TempDir()
	s, _ := hubStore(t, root)
	imgs := pullAll(t, s, "busybox", "busybox:1.36", "foo/bar")
	ctx := context.Background()
	snaps := len(dirNames(t, filepath.Join(root, "snapshots")))
	if snaps != 3 { // busybox and foo/bar share their bottom layer
		t.Fatalf("%d snapshots, want 3 (shared base)", snaps)
	}

	// By tag: only that name goes.
	if err := s.Remove(ctx, "busybox:1.36"); err != nil {
		t.Fatal(err)
	}
	bb, err := s.Resolve("busybox")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"docker.io/library/busybox:latest"}, bb.RepoTags); diff != "" {
		t.Errorf("RepoTags after tag removal (-want +got):\n%s", diff)
	}
	if _, err := s.Resolve("busybox:1.36"); !errdefs.IsNotFound(err) {
		t.Errorf("removed tag still resolves: %v", err)
	}
	// Idempotent.
	if err := s.Remove(ctx, "busybox:1.36"); err != nil {
		t.Errorf("second remove: %v", err)
	}

	// By id: the image with all names, and its unshared layer.
	if err := s.Remove(ctx, imgs[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve("busybox"); !errdefs.IsNotFound(err) {
		t.Errorf("removed image still resolves: %v", err)
	}
	if err := s.Remove(ctx, imgs[0].ID); err != nil {
		t.Errorf("second remove by id: %v", err)
	}
	fb, err := s.Resolve("foo/bar")
	if err != nil {
		t.Fatal(err)
	}
	if m := readTop(t, s, fb, "etc/marker"); m != "foobar" {
		t.Errorf("foo/bar marker = %q", m)
	}
	if n := len(dirNames(t, filepath.Join(root, "snapshots"))); n != 2 {
		t.Errorf("%d snapshots after removing busybox, want 2", n)
	}
	if _, err := os.Stat(filepath.Join(root, "images", strings.TrimPrefix(imgs[0].ID, "sha256:")+".json")); !os.IsNotExist(err) {
		t.Errorf("record of removed image still on disk: %v", err)
	}

	// Removing the last tag removes the image and everything it held.
	if err := s.Remove(ctx, "foo/bar:latest"); err != nil {
		t.Fatal(err)
	}
	if len(s.List()) != 0 {
		t.Errorf("List = %v, want empty", s.List())
	}
	if n := len(dirNames(t, filepath.Join(root, "snapshots"))); n != 0 {
		t.Errorf("%d snapshots left, want 0", n)
	}
	if n := countFiles(t, filepath.Join(root, "blobs")); n != 0 {
		t.Errorf("%d blobs left, want 0", n)
	}
}

func TestRetainKeepsSnapshots(t *testing.T) {
	requiresRoot(t)
	root := t.TempDir()
	s, _ := hubStore(t, root)
	img := pullAll(t, s, "busybox")[0]
	s.Retain(img.ChainIDs)
	dirs, err := s.LowerDirs(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(context.Background(), img.ID); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("retained snapshot %s removed: %v", d, err)
		}
	}
	s.Release(img.ChainIDs)
	if err := s.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(dirNames(t, filepath.Join(root, "snapshots"))); n != 0 {
		t.Errorf("%d snapshots after release and prune, want 0", n)
	}
}

func TestRecordsSurviveReopen(t *testing.T) {
	requiresRoot(t)
	root := t.TempDir()
	s, _ := hubStore(t, root)
	pullAll(t, s, "busybox", "busybox:1.36", "foo/bar")
	if err := s.SetPinned("foo/bar", true); err != nil {
		t.Fatal(err)
	}
	before := s.List()
	if _, err := Open(context.Background(), Config{Root: root}); !errdefs.IsUnavailable(err) {
		t.Fatalf("second Open of a store in use = %v, want Unavailable", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Leftovers of a crash: a half-written record, a partial ingest, a
	// half-unpacked snapshot, a load in progress.
	for _, p := range []string{"images/.tmp-123", "ingest/blob-1", "snapshots/tmp-9/fs/x", "tmp/load-1/index.json"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	again := openStore(t, root, Config{})
	if diff := cmp.Diff(before, again.List()); diff != "" {
		t.Errorf("List after reopen (-want +got):\n%s", diff)
	}
	fb, err := again.Resolve("foo/bar")
	if err != nil || !fb.Pinned {
		t.Errorf("foo/bar after reopen: pinned=%v err=%v", fb.Pinned, err)
	}
	if _, err := again.LowerDirs(fb); err != nil {
		t.Errorf("LowerDirs after reopen: %v", err)
	}
	for _, d := range []string{"ingest", "tmp"} {
		if left := dirNames(t, filepath.Join(root, d)); len(left) != 0 {
			t.Errorf("%s not cleaned: %v", d, left)
		}
	}
	if left := dirNames(t, filepath.Join(root, "images")); len(left) != 2 {
		t.Errorf("images dir holds %v, want two records", left)
	}
	if n := len(dirNames(t, filepath.Join(root, "snapshots"))); n != 3 {
		t.Errorf("%d snapshot dirs, want 3", n)
	}
	u, err := again.FsInfo()
	if err != nil {
		t.Fatal(err)
	}
	if u.Mountpoint != root || u.UsedBytes == 0 || u.InodesUsed < 10 {
		t.Errorf("FsInfo = %+v", u)
	}
}

func TestTagMovesToNewImage(t *testing.T) {
	requiresRoot(t)
	reg := newRegistry(t)
	s := openStore(t, t.TempDir(), Config{})
	reg.push(t, "app:latest", testImage(t, "amd64", "old"))
	old := pullAll(t, s, reg.host+"/app:latest")[0]
	reg.push(t, "app:latest", testImage(t, "amd64", "new"))
	cur := pullAll(t, s, reg.host+"/app:latest")[0]
	if old.ID == cur.ID {
		t.Fatal("expected a different image")
	}
	prev, err := s.Resolve(old.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(prev.RepoTags) != 0 {
		t.Errorf("old image still tagged: %v", prev.RepoTags)
	}
	got, err := s.Resolve(reg.host + "/app:latest")
	if err != nil || got.ID != cur.ID {
		t.Errorf("tag resolves to %s (%v), want %s", got.ID, err, cur.ID)
	}
}

func TestHoldRefusesRemoval(t *testing.T) {
	requiresRoot(t)
	s, _ := hubStore(t, t.TempDir())
	imgs := pullAll(t, s, "busybox", "busybox:1.36", "foo/bar")
	bb := imgs[0]
	ctx := context.Background()
	if err := s.Hold(bb.ID, "ctr1"); err != nil {
		t.Fatal(err)
	}
	// Dropping one of two names leaves the image: allowed.
	if err := s.Remove(ctx, "busybox:1.36"); err != nil {
		t.Errorf("remove one of two tags of a held image: %v", err)
	}
	for _, ref := range []string{bb.ID, "busybox"} {
		err := s.Remove(ctx, ref)
		if !errdefs.IsFailedPrecondition(err) || !strings.Contains(err.Error(), "ctr1") {
			t.Errorf("Remove(%s) of a held image = %v, want FailedPrecondition naming ctr1", ref, err)
		}
	}
	rep, err := s.PruneImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{imgs[2].ID}, rep.Images); diff != "" {
		t.Errorf("PruneImages removed (-want +got):\n%s", diff)
	}
	s.Unhold(bb.ID, "ctr1")
	if err := s.Remove(ctx, "busybox"); err != nil {
		t.Fatalf("remove after unhold: %v", err)
	}
	if _, err := s.Resolve(bb.ID); !errdefs.IsNotFound(err) {
		t.Errorf("image resolves after removal: %v", err)
	}
	if err := s.Hold(bb.ID, "ctr2"); !errdefs.IsNotFound(err) {
		t.Errorf("Hold of a removed image = %v, want NotFound", err)
	}
}

// TestRemoveLeftoverFailsOnlyItsOwnRetry: what a removal could not delete
// is deleted by a later removal; while it still cannot be, it fails the
// retry of the removal that left it, not the removal of another image.
func TestRemoveLeftoverFailsOnlyItsOwnRetry(t *testing.T) {
	requiresRoot(t)
	root := t.TempDir()
	s, _ := hubStore(t, root)
	imgs := pullAll(t, s, "busybox", "foo/bar")
	ctx := context.Background()

	// busybox's config blob becomes a directory with a file in it: a real
	// deletion failure (ENOTEMPTY), which nothing but the test can undo.
	blob, err := s.content.Path(digest.Digest(imgs[0].ID))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(blob); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(blob, "stuck"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, "busybox"); err == nil {
		t.Fatal("removing busybox with an undeletable blob succeeded")
	}
	if _, err := s.Resolve("busybox"); !errdefs.IsNotFound(err) {
		t.Errorf("busybox still resolves after its removal failed past its record: %v", err)
	}
	if err := s.Remove(ctx, "foo/bar"); err != nil {
		t.Errorf("removing foo/bar failed on busybox's leftover: %v", err)
	}
	if err := s.Remove(ctx, "busybox"); err == nil {
		t.Error("the retry of busybox's removal succeeded while its blob still cannot be deleted")
	}

	if err := os.RemoveAll(filepath.Join(blob, "stuck")); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, "busybox"); err != nil {
		t.Errorf("the retry of busybox's removal, the blob deletable again: %v", err)
	}
	if _, err := os.Stat(blob); !os.IsNotExist(err) {
		t.Errorf("busybox's config blob is still there after the retry: %v", err)
	}
	if n := len(dirNames(t, filepath.Join(root, "snapshots"))); n != 0 {
		t.Errorf("%d snapshots left after both images were removed, want 0", n)
	}
}
