package daemon

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// capSysResource is CAP_SYS_RESOURCE's bit in the capability sets.
const capSysResource = 24

// oomScoreAdjMin is the lowest oom_score_adj crib can give a container:
// anything with CAP_SYS_RESOURCE may go to -1000; without it, nothing may
// go below crib's own value.
func oomScoreAdjMin() int {
	if hasCapability(capSysResource) {
		return -1000
	}
	data, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return 0
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0
	}
	return v
}

// hasCapability reads the effective set of this process.
func hasCapability(bit uint) bool {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<bit) != 0
		}
	}
	return false
}

// hasController reports whether the cgroup controller is available: a v1
// hierarchy of that name, or a controller of the unified root.
func hasController(name string) bool {
	if _, err := os.Stat("/sys/fs/cgroup/" + name); err == nil {
		return true
	}
	data, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
	if err != nil {
		return false
	}
	for _, c := range strings.Fields(string(data)) {
		if c == name {
			return true
		}
	}
	return false
}
