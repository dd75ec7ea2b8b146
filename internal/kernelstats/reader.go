package kernelstats

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
)

// DefaultRoot is where cgroup filesystems are mounted.
const DefaultRoot = "/sys/fs/cgroup"

// Config says where cgroups are and how they are named.
type Config struct {
	// Root is where the cgroup filesystems are mounted; "" means
	// DefaultRoot. On a v1 host it holds one hierarchy per controller
	// (Root/memory, Root/cpuacct, Root/pids).
	Root string
	// Unified says Root is the cgroup v2 unified hierarchy.
	Unified bool
	// Systemd says cgroups paths follow the systemd driver's naming (see
	// GroupPath).
	Systemd bool
}

// Reader reads cgroup samples. It keeps no state between reads and is safe
// for concurrent use.
type Reader struct {
	cfg Config
}

// NewReader returns a Reader for cfg; it does no I/O.
func NewReader(cfg Config) *Reader {
	if cfg.Root == "" {
		cfg.Root = DefaultRoot
	}
	return &Reader{cfg: cfg}
}

// Read samples the cgroup named by cgroupsPath: an OCI linux.cgroupsPath
// or a pod's cgroup parent, in the form the configured driver uses. A
// cgroup that does not exist, or goes while it is read, gives
// errdefs.ErrNotFound.
func (r *Reader) Read(ctx context.Context, cgroupsPath string) (Sample, error) {
	if err := ctx.Err(); err != nil {
		return Sample{}, err
	}
	group, err := GroupPath(cgroupsPath, r.cfg.Systemd)
	if err != nil {
		return Sample{}, err
	}
	now := time.Now()
	var s Sample
	if r.cfg.Unified {
		s, err = readV2(r.cfg.Root, group)
	} else {
		s, err = readV1(r.cfg.Root, group)
	}
	if err != nil {
		// A cgroup removed between the opening of one of its files and
		// the reading of it reads as ENODEV.
		gone := errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENODEV)
		if gone && !errdefs.IsNotFound(err) {
			err = fmt.Errorf("%w: %w", errdefs.ErrNotFound, err)
		}
		return Sample{}, fmt.Errorf("read cgroup %s: %w", group, err)
	}
	s.Time = now
	return s, nil
}
