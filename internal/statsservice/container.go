package statsservice

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/kernelstats"
)

// Container is a container's usage.
type Container struct {
	// Cgroup is nil when the container has no cgroup to read: it has
	// exited (or exited meanwhile and the runtime deleted its cgroup),
	// or its cgroup could not be read.
	Cgroup *Cgroup
	// Layer is the writable layer's usage; nil when it could not be
	// measured.
	Layer *Layer
}

// Layer is a writable layer's disk usage.
type Layer struct {
	// Time is when the measurement started.
	Time time.Time
	// Mountpoint names the filesystem the layer is on.
	Mountpoint string
	kernelstats.DiskUsage
	// Capacity is the size of the layer's filesystem; nil when it could
	// not be read.
	Capacity *kernelstats.Capacity
}

// Container reads c's usage from its cgroup and writable layer, with file
// reads only. Created and running containers have a cgroup (the runtime
// made it at create); exited ones are measured by their writable layer
// alone.
func (s *Service) Container(ctx context.Context, c container.Container) (Container, error) {
	var u Container
	paths, err := s.containers.StatsPaths(c)
	if err != nil {
		return u, fmt.Errorf("container %s stats: %w", c.ID, err)
	}
	var errs []error
	if c.State == container.Created || c.State == container.Running {
		if u.Cgroup, err = s.readCgroup(ctx, c.ID, paths.CgroupsPath); err != nil {
			errs = append(errs, err)
		}
	}
	if u.Layer, err = writableLayer(ctx, paths); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return u, fmt.Errorf("container %s stats: %w", c.ID, err)
	}
	return u, nil
}

// writableLayer measures the container's overlay upper dir and the size
// of its filesystem. A layer already removed reads as empty; a filesystem
// whose size cannot be read leaves the layer without a capacity, and the
// error says why.
func writableLayer(ctx context.Context, paths container.StatsPaths) (*Layer, error) {
	now := time.Now()
	u, err := kernelstats.Disk(ctx, paths.WritableLayer, writableLayerMaxEntries)
	if err != nil && !errdefs.IsNotFound(err) {
		return nil, err
	}
	l := &Layer{Time: now, Mountpoint: paths.FsRoot, DiskUsage: u}
	c, err := kernelstats.FsCapacity(paths.FsRoot)
	if err != nil {
		return l, err
	}
	l.Capacity = &c
	return l, nil
}
