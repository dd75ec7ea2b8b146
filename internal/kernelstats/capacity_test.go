package kernelstats

import (
	"errors"
	"io/fs"
	"testing"
)

func TestFsCapacity(t *testing.T) {
	c, err := FsCapacity(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if c.Bytes == 0 || c.BytesAvail > c.Bytes || c.InodesFree > c.Inodes {
		t.Errorf("capacity %+v: want a size, and no more free than total", c)
	}
	if _, err := FsCapacity("/nonexistent/dir"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("FsCapacity of a missing dir = %v, want not exist", err)
	}
}
