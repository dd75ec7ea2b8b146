package podcgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// readPids lists the processes of the cgroup dir (not its children); a
// cgroup without cgroup.procs has none.
func readPids(dir string) ([]int, error) {
	f, err := os.Open(filepath.Join(dir, "cgroup.procs"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read processes of cgroup %s: %w", dir, err)
	}
	defer f.Close()
	var pids []int
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" {
			continue
		}
		pid, err := strconv.Atoi(line)
		if err != nil {
			return nil, fmt.Errorf("read processes of cgroup %s: bad pid %q", dir, line)
		}
		pids = append(pids, pid)
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("read processes of cgroup %s: %w", dir, err)
	}
	return pids, nil
}
