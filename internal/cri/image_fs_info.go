package cri

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/kernelstats"
)

// ImageFsInfo reports the bytes and inodes the image store uses and, as
// the container filesystem, those of every container's writable layer
// (the overlay upper dirs).
//
// The kubelet (KEP-4191, KubeletSeparateDiskGC) wants both lists filled
// and reads image and container filesystems with different mountpoints as
// a node whose images and containers live on separate disks. crib keeps
// both under its root, so while the writable layers are on the image
// store's filesystem both entries name the image store's directory; only
// when an operator has put the containers' directory on a filesystem of
// its own does the container entry name that directory instead (the
// usage service tells which).
func (s *Server) ImageFsInfo(ctx context.Context, _ *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	fs, err := s.usage.Filesystems(ctx)
	if err != nil {
		return nil, err
	}
	return fsInfoResponse(fs.Time, fs.Images, fs.Layers, fs.LayersMountpoint), nil
}

// fsInfoResponse is the answer for the image store's usage img and the
// writable layers' usage layers, whose filesystem is named mount.
func fsInfoResponse(now time.Time, img image.FsUsage, layers kernelstats.DiskUsage, mount string) *runtimeapi.ImageFsInfoResponse {
	entry := func(mountpoint string, bytes, inodes uint64) *runtimeapi.FilesystemUsage {
		return &runtimeapi.FilesystemUsage{
			Timestamp:  now.UnixNano(),
			FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: mountpoint},
			UsedBytes:  &runtimeapi.UInt64Value{Value: bytes},
			InodesUsed: &runtimeapi.UInt64Value{Value: inodes},
		}
	}
	return &runtimeapi.ImageFsInfoResponse{
		ImageFilesystems:     []*runtimeapi.FilesystemUsage{entry(img.Mountpoint, img.UsedBytes, img.InodesUsed)},
		ContainerFilesystems: []*runtimeapi.FilesystemUsage{entry(mount, layers.Bytes, layers.Inodes)},
	}
}
