package monitor

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroupRoot is where cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// oomFile names the file and key that count OOM kills in one memory
// cgroup.
type oomFile struct {
	path string
	key  string
}

// memoryCgroup finds the memory cgroup of pid from /proc/<pid>/cgroup: the
// v1 memory hierarchy when there is one, the unified hierarchy otherwise.
// It returns a zero oomFile when none is found.
func memoryCgroup(pid int) oomFile {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return oomFile{}
	}
	return memoryCgroupFrom(string(b), cgroupRoot)
}

func memoryCgroupFrom(procCgroup, root string) oomFile {
	var unified string
	sc := bufio.NewScanner(strings.NewReader(procCgroup))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			unified = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" {
				return oomFile{path: filepath.Join(root, "memory", parts[2], "memory.oom_control"), key: "oom_kill"}
			}
		}
	}
	if unified == "" {
		return oomFile{}
	}
	return oomFile{path: filepath.Join(root, unified, "memory.events"), key: "oom_kill"}
}

// killed reports whether the cgroup counted at least one OOM kill. Missing
// files (cgroup already gone, controller absent) read as false.
func (o oomFile) killed() bool {
	if o.path == "" {
		return false
	}
	b, err := os.ReadFile(o.path)
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || k != o.key {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		return err == nil && n > 0
	}
	return false
}
