package kernelstats

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// countProcesses counts the processes of the cgroup at dir and of its
// children: the lines of every cgroup.procs below dir. A child removed
// during the walk is skipped.
func countProcesses(dir string) (uint64, error) {
	var n uint64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != dir {
				return nil
			}
			return err
		}
		if d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		n += uint64(bytes.Count(b, []byte{'\n'}))
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("count processes: %w", err)
	}
	return n, nil
}
