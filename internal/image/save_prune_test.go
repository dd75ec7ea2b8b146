package image

import (
	"bytes"
	"context"
	"sort"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestSaveRoundTrip(t *testing.T) {
	requiresRoot(t)
	src, _ := hubStore(t, t.TempDir())
	pulled := pullAll(t, src, "busybox:latest", "busybox:1.36")[0]

	// A docker archive loaded without a manifest can be saved again too.
	loaded := testImage(t, "amd64", "loaded")
	ref, err := name.ParseReference("quay.io/crib/loaded:v1")
	if err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if err := tarball.MultiRefWrite(map[name.Reference]v1.Image{ref: loaded}, &archive); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Load(context.Background(), &archive); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		ref, format string
		wantID      string
		wantTags    []string
	}{
		{"busybox", FormatOCI, pulled.ID, []string{"docker.io/library/busybox:1.36", "docker.io/library/busybox:latest"}},
		{"busybox", FormatDocker, pulled.ID, []string{"docker.io/library/busybox:1.36", "docker.io/library/busybox:latest"}},
		{"quay.io/crib/loaded:v1", FormatOCI, configDigest(t, loaded), []string{"quay.io/crib/loaded:v1"}},
		{"quay.io/crib/loaded:v1", FormatDocker, configDigest(t, loaded), []string{"quay.io/crib/loaded:v1"}},
	}
	for _, tt := range tests {
		t.Run(tt.ref+"/"+tt.format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := src.Save(context.Background(), tt.ref, tt.format, &buf); err != nil {
				t.Fatalf("Save: %v", err)
			}
			dst := openStore(t, t.TempDir(), Config{})
			got, err := dst.Load(context.Background(), &buf)
			if err != nil {
				t.Fatalf("Load of the saved tarball: %v", err)
			}
			// An OCI layout lists the image once per tag; Load reports
			// each entry.
			for _, img := range got {
				if img.ID != tt.wantID {
					t.Fatalf("Load gave image %s, want only %s", img.ID, tt.wantID)
				}
			}
			if n := len(dst.List()); n != 1 {
				t.Fatalf("store holds %d images after the load, want 1", n)
			}
			img, err := dst.Resolve(tt.wantID)
			if err != nil {
				t.Fatal(err)
			}
			tags := append([]string(nil), img.RepoTags...)
			sort.Strings(tags)
			if diff := cmp.Diff(tt.wantTags, tags); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
			if m := readTop(t, dst, img, "bin/sh"); m != "shell" {
				t.Errorf("bin/sh after the round trip = %q", m)
			}
		})
	}

	if err := src.Save(context.Background(), "busybox", "zip", &bytes.Buffer{}); err == nil {
		t.Errorf("Save in an unknown format succeeded")
	}
	if err := src.Save(context.Background(), "nginx", FormatOCI, &bytes.Buffer{}); err == nil {
		t.Errorf("Save of a missing image succeeded")
	}
}

func TestPruneImages(t *testing.T) {
	requiresRoot(t)
	s, reg := hubStore(t, t.TempDir())
	reg.push(t, "foo/pinned:1", testImage(t, "amd64", "pinned"))
	imgs := pullAll(t, s, "busybox:latest", "foo/bar:latest", "foo/pinned:1")
	inUse, unused, pinned := imgs[0], imgs[1], imgs[2]
	if err := s.SetPinned(pinned.ID, true); err != nil {
		t.Fatal(err)
	}
	s.Retain(inUse.ChainIDs)

	rep, err := s.PruneImages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{unused.ID}, rep.Images); diff != "" {
		t.Errorf("pruned (-want +got):\n%s", diff)
	}
	if rep.BytesFreed == 0 {
		t.Errorf("BytesFreed = 0 after removing an image with its own layer")
	}
	var left []string
	for _, img := range s.List() {
		left = append(left, img.ID)
	}
	want := []string{inUse.ID, pinned.ID}
	sort.Strings(want)
	if diff := cmp.Diff(want, left); diff != "" {
		t.Errorf("images left (-want +got):\n%s", diff)
	}
	if m := readTop(t, s, inUse, "etc/marker"); m != "busybox" {
		t.Errorf("the image in use lost its layers: etc/marker = %q", m)
	}

	// Released, it goes on the next prune.
	s.Release(inUse.ChainIDs)
	if rep, err = s.PruneImages(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{inUse.ID}, rep.Images); diff != "" {
		t.Errorf("second prune (-want +got):\n%s", diff)
	}
}

func TestPullProgress(t *testing.T) {
	requiresRoot(t)
	s, _ := hubStore(t, t.TempDir())
	var mu sync.Mutex
	last := map[string]Progress{}
	var calls int
	img, err := s.Pull(context.Background(), "busybox:latest", Auth{}, WithProgress(func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if prev, ok := last[p.Layer]; ok && p.Done < prev.Done {
			t.Errorf("layer %s went back from %d to %d bytes", p.Layer, prev.Done, p.Done)
		}
		last[p.Layer] = p
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(last) != len(img.ChainIDs) {
		t.Fatalf("progress named %d layers, want %d", len(last), len(img.ChainIDs))
	}
	for l, p := range last {
		if p.Total == 0 || p.Done != p.Total {
			t.Errorf("layer %s ended at %d/%d bytes", l, p.Done, p.Total)
		}
	}
	// A second pull fetches nothing but still reports every layer done.
	calls = 0
	clear(last)
	if _, err := s.Pull(context.Background(), "busybox:1.36", Auth{}, WithProgress(func(p Progress) {
		calls++
		last[p.Layer] = p
	})); err != nil {
		t.Fatal(err)
	}
	if calls != len(img.ChainIDs) || len(last) != len(img.ChainIDs) {
		t.Errorf("a pull of present layers reported %d times for %d layers", calls, len(last))
	}
}
