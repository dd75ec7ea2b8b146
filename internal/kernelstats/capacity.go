package kernelstats

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Capacity is the size of the filesystem a directory is on.
type Capacity struct {
	Bytes      uint64
	Inodes     uint64
	InodesFree uint64
	BytesAvail uint64
}

// FsCapacity reads the capacity of the filesystem dir is on.
func FsCapacity(dir string) (Capacity, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Capacity{}, fmt.Errorf("statfs %s: %w", dir, err)
	}
	bs := uint64(st.Bsize)
	return Capacity{Bytes: st.Blocks * bs, BytesAvail: st.Bavail * bs, Inodes: st.Files, InodesFree: st.Ffree}, nil
}
