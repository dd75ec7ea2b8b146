package cri

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/stats"
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
// its own does the container entry name that directory instead.
func (s *Server) ImageFsInfo(ctx context.Context, _ *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	img, err := s.images.FsInfo()
	if err != nil {
		return nil, err
	}
	var layers []string
	var layerRoot string
	for _, c := range s.containers.List() {
		paths, err := s.containers.StatsPaths(c)
		if err != nil {
			// Its sandbox is gone: the container is being removed.
			continue
		}
		layers = append(layers, paths.WritableLayer)
		layerRoot = paths.FsRoot
	}
	used, err := writableLayersUsage(ctx, layers)
	if err != nil {
		return nil, err
	}
	mount, err := containerFsMountpoint(img.Mountpoint, layerRoot)
	if err != nil {
		return nil, err
	}
	return fsInfoResponse(time.Now(), img, used, mount), nil
}

// fsInfoResponse is the answer for the image store's usage img and the
// writable layers' usage layers, whose filesystem is named mount.
func fsInfoResponse(now time.Time, img image.FsUsage, layers stats.DiskUsage, mount string) *runtimeapi.ImageFsInfoResponse {
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

// writableLayersUsage adds up the disk use of the given writable layers.
// A layer already removed counts as empty; a layer too big to walk in
// full counts with what the bounded walk saw.
func writableLayersUsage(ctx context.Context, dirs []string) (stats.DiskUsage, error) {
	var sum stats.DiskUsage
	for _, dir := range dirs {
		u, err := stats.Disk(ctx, dir, writableLayerMaxEntries)
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return stats.DiskUsage{}, fmt.Errorf("measure writable layers: %w", err)
		}
		sum.Bytes += u.Bytes
		sum.Inodes += u.Inodes
		sum.Partial = sum.Partial || u.Partial
	}
	return sum, nil
}

// containerFsMountpoint names the filesystem of the writable layers, which
// live under layerRoot: imageRoot when layerRoot is on the same
// filesystem as imageRoot (or unknown, with no container yet), layerRoot
// when it is on another.
func containerFsMountpoint(imageRoot, layerRoot string) (string, error) {
	if layerRoot == "" {
		return imageRoot, nil
	}
	same, err := sameFilesystem(imageRoot, layerRoot)
	if errors.Is(err, fs.ErrNotExist) {
		return imageRoot, nil
	}
	if err != nil {
		return "", fmt.Errorf("find the container filesystem: %w", err)
	}
	if same {
		return imageRoot, nil
	}
	return layerRoot, nil
}

// sameFilesystem reports whether a and b are on one filesystem (the same
// device number).
func sameFilesystem(a, b string) (bool, error) {
	var sa, sb syscall.Stat_t
	if err := syscall.Stat(a, &sa); err != nil {
		return false, &os.PathError{Op: "stat", Path: a, Err: err}
	}
	if err := syscall.Stat(b, &sb); err != nil {
		return false, &os.PathError{Op: "stat", Path: b, Err: err}
	}
	return sa.Dev == sb.Dev, nil
}
