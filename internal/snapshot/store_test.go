package snapshot

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	"github.com/opencontainers/go-digest"
)

func TestChainIDs(t *testing.T) {
	a, b, c := digest.FromString("a"), digest.FromString("b"), digest.FromString("c")
	ab := digest.FromString(a.String() + " " + b.String())
	abc := digest.FromString(ab.String() + " " + c.String())
	tests := []struct {
		in   []digest.Digest
		want []digest.Digest
	}{
		{nil, []digest.Digest{}},
		{[]digest.Digest{a}, []digest.Digest{a}},
		{[]digest.Digest{a, b, c}, []digest.Digest{a, ab, abc}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, ChainIDs(tc.in)); diff != "" {
			t.Errorf("ChainIDs(%v) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestStackLowerDirsRemove(t *testing.T) {
	requiresRoot(t)
	root := t.TempDir()
	s, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l0, d0 := makeTar(t, file("a", "bottom", 0o644))
	l1, d1 := makeTar(t, file("a", "top", 0o644), file(".wh.b", "", 0o644))
	i0, err := s.Unpack(ctx, "", d0, bytes.NewReader(l0), 0)
	if err != nil {
		t.Fatal(err)
	}
	i1, err := s.Unpack(ctx, i0.ChainID, d1, bytes.NewReader(l1), 0)
	if err != nil {
		t.Fatal(err)
	}
	chain := ChainIDs([]digest.Digest{d0, d1})
	if diff := cmp.Diff(chain, []digest.Digest{i0.ChainID, i1.ChainID}); diff != "" {
		t.Errorf("chain ids (-want +got):\n%s", diff)
	}
	dirs, err := s.LowerDirs(chain)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(root, "snapshots", chain[1].Encoded(), "fs"),
		filepath.Join(root, "snapshots", chain[0].Encoded(), "fs"),
	}
	if diff := cmp.Diff(want, dirs); diff != "" {
		t.Errorf("LowerDirs (-want +got):\n%s", diff)
	}
	if err := s.Remove(chain[1]); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(chain[1]); err != nil {
		t.Fatalf("second remove: %v", err)
	}
	if _, err := s.LowerDirs(chain); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("LowerDirs after remove = %v, want not found", err)
	}
	ids, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]digest.Digest{chain[0]}, ids); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
}

func TestOpenRemovesCrashLeftovers(t *testing.T) {
	root := t.TempDir()
	snaps := filepath.Join(root, "snapshots")
	half := digest.FromString("half").Encoded()
	done := digest.FromString("done")
	for _, d := range []string{"tmp-123/fs/etc", half + "/fs/bin", done.Encoded() + "/fs"} {
		if err := os.MkdirAll(filepath.Join(snaps, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeCommitted(filepath.Join(snaps, done.Encoded()), Info{ChainID: done, DiffID: done}); err != nil {
		t.Fatal(err)
	}
	s, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{done.Encoded()}, listNames(t, snaps)); diff != "" {
		t.Errorf("snapshot dir after Open (-want +got):\n%s", diff)
	}
	if !s.Exists(done) {
		t.Error("committed snapshot lost")
	}
}
