package cri

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/stats"
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

// kubeletSeesSplit is the kubelet's test for separate image and container
// disks (pkg/kubelet/stats, KubeletSeparateDiskGC): both lists must be
// there, and differing mountpoints mean a split.
func kubeletSeesSplit(t *testing.T, resp *runtimeapi.ImageFsInfoResponse) bool {
	t.Helper()
	if len(resp.GetImageFilesystems()) == 0 || len(resp.GetContainerFilesystems()) == 0 {
		t.Fatalf("the kubelet refuses an answer without both lists: %v", resp)
	}
	return resp.ImageFilesystems[0].GetFsId().GetMountpoint() != resp.ContainerFilesystems[0].GetFsId().GetMountpoint()
}

func TestFsInfoResponse(t *testing.T) {
	now := time.Unix(100, 5)
	img := image.FsUsage{Mountpoint: "/var/lib/crib/images", UsedBytes: 4096, InodesUsed: 7}
	layers := stats.DiskUsage{Bytes: 8192, Inodes: 3}
	usage := func(mount string, bytes, inodes uint64) *runtimeapi.FilesystemUsage {
		return &runtimeapi.FilesystemUsage{
			Timestamp:  now.UnixNano(),
			FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: mount},
			UsedBytes:  &runtimeapi.UInt64Value{Value: bytes},
			InodesUsed: &runtimeapi.UInt64Value{Value: inodes},
		}
	}
	tests := []struct {
		name      string
		mount     string
		want      *runtimeapi.ImageFsInfoResponse
		wantSplit bool
	}{
		{
			name:  "one filesystem",
			mount: img.Mountpoint,
			want: &runtimeapi.ImageFsInfoResponse{
				ImageFilesystems:     []*runtimeapi.FilesystemUsage{usage(img.Mountpoint, 4096, 7)},
				ContainerFilesystems: []*runtimeapi.FilesystemUsage{usage(img.Mountpoint, 8192, 3)},
			},
		},
		{
			name:  "containers on their own disk",
			mount: "/mnt/containers",
			want: &runtimeapi.ImageFsInfoResponse{
				ImageFilesystems:     []*runtimeapi.FilesystemUsage{usage(img.Mountpoint, 4096, 7)},
				ContainerFilesystems: []*runtimeapi.FilesystemUsage{usage("/mnt/containers", 8192, 3)},
			},
			wantSplit: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fsInfoResponse(now, img, layers, tt.mount)
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if split := kubeletSeesSplit(t, got); split != tt.wantSplit {
				t.Errorf("the kubelet sees a split disk: %v, want %v", split, tt.wantSplit)
			}
		})
	}
}
