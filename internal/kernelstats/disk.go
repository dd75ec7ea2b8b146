package kernelstats

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"

	"github.com/containerd/errdefs"
)

// DiskUsage is the space a directory tree takes.
type DiskUsage struct {
	// Bytes is the disk blocks allocated, in bytes; a file linked twice
	// counts once.
	Bytes uint64
	// Inodes counts distinct inodes, the directory itself included.
	Inodes uint64
	// Partial is set when the walk stopped at its entry limit, so the
	// figures are a lower bound.
	Partial bool
}

// Disk measures the tree at dir, visiting at most maxEntries entries
// (no limit when maxEntries <= 0). Entries that vanish during the walk are
// skipped; a missing dir gives errdefs.ErrNotFound.
func Disk(ctx context.Context, dir string, maxEntries int) (DiskUsage, error) {
	var u DiskUsage
	type key struct{ dev, ino uint64 }
	seen := map[key]struct{}{}
	visited := 0
	errStop := errors.New("stop")
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != dir {
				return nil
			}
			return err
		}
		if visited%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if maxEntries > 0 && visited >= maxEntries {
			u.Partial = true
			return errStop
		}
		visited++
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		k := key{uint64(st.Dev), st.Ino}
		if _, dup := seen[k]; dup {
			return nil
		}
		seen[k] = struct{}{}
		u.Inodes++
		u.Bytes += uint64(st.Blocks) * 512
		return nil
	})
	switch {
	case err == nil, errors.Is(err, errStop):
		return u, nil
	case errors.Is(err, fs.ErrNotExist):
		return DiskUsage{}, fmt.Errorf("measure %s: %w", dir, errdefs.ErrNotFound)
	default:
		return DiskUsage{}, fmt.Errorf("measure %s: %w", dir, err)
	}
}
