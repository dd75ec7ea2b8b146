package statsservice

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestWritableLayersUsageCountsWrittenBytes(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a", "fs"), filepath.Join(root, "b", "fs")
	for _, d := range []string{a, b} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A container removed meanwhile: its layer counts as empty.
	gone := filepath.Join(root, "gone", "fs")
	layers := []string{a, b, gone}
	ctx := context.Background()
	before, err := writableLayersUsage(ctx, layers)
	if err != nil {
		t.Fatal(err)
	}
	if before.Inodes != 2 {
		t.Errorf("two empty layers count %d inodes, want 2 (their directories)", before.Inodes)
	}
	const written = 1 << 20
	if err := os.WriteFile(filepath.Join(a, "filler"), make([]byte, written), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(b, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b, "etc", "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	after, err := writableLayersUsage(ctx, layers)
	if err != nil {
		t.Fatal(err)
	}
	if after.Bytes < before.Bytes+written {
		t.Errorf("used bytes grew from %d to %d after writing %d bytes", before.Bytes, after.Bytes, written)
	}
	if got, want := after.Inodes-before.Inodes, uint64(3); got != want {
		t.Errorf("inodes grew by %d, want %d (a file, a directory and a file)", got, want)
	}
}

func TestContainerFsMountpoint(t *testing.T) {
	root := t.TempDir()
	images, containers := filepath.Join(root, "images"), filepath.Join(root, "containers")
	for _, d := range []string{images, containers} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name      string
		layerRoot string
		want      string
	}{
		{name: "no container yet", layerRoot: "", want: images},
		{name: "layers beside the images", layerRoot: containers, want: images},
		{name: "layer root not made yet", layerRoot: filepath.Join(root, "missing"), want: images},
		// /proc is never the temp dir's filesystem.
		{name: "layers on a filesystem of their own", layerRoot: "/proc", want: "/proc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := containerFsMountpoint(images, tt.layerRoot)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("containerFsMountpoint(%q, %q) = %q, want %q", images, tt.layerRoot, got, tt.want)
			}
		})
	}
}
