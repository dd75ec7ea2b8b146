package cri

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/kernelstats"
)

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
	layers := kernelstats.DiskUsage{Bytes: 8192, Inodes: 3}
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
