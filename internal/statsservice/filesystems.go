package statsservice

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/kernelstats"
)

// Filesystems is the usage of the image store and of every container's
// writable layer.
type Filesystems struct {
	// Time is when the measurement ended.
	Time time.Time
	// Images is the image store's usage and the directory that names its
	// filesystem.
	Images image.FsUsage
	// Layers adds up the writable layers' usage.
	Layers kernelstats.DiskUsage
	// LayersMountpoint names the writable layers' filesystem: the image
	// store's directory while the layers are on its filesystem, the
	// containers' directory when an operator put it on one of its own.
	LayersMountpoint string
}

// Filesystems measures the image store and every container's writable
// layer.
func (s *Service) Filesystems(ctx context.Context) (Filesystems, error) {
	img, err := s.images.FsInfo()
	if err != nil {
		return Filesystems{}, err
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
		return Filesystems{}, err
	}
	mount, err := containerFsMountpoint(img.Mountpoint, layerRoot)
	if err != nil {
		return Filesystems{}, err
	}
	return Filesystems{Time: time.Now(), Images: img, Layers: used, LayersMountpoint: mount}, nil
}

// writableLayersUsage adds up the disk use of the given writable layers.
// A layer already removed counts as empty; a layer too big to walk in
// full counts with what the bounded walk saw.
func writableLayersUsage(ctx context.Context, dirs []string) (kernelstats.DiskUsage, error) {
	var sum kernelstats.DiskUsage
	for _, dir := range dirs {
		u, err := kernelstats.Disk(ctx, dir, writableLayerMaxEntries)
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return kernelstats.DiskUsage{}, fmt.Errorf("measure writable layers: %w", err)
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
