package kernelstats

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/errdefs"
)

// readV1 samples group in the v1 hierarchies under root. Only the
// controllers stats needs are loaded; a controller whose hierarchy lacks
// the group is left out of the sample.
func readV1(root, group string) (Sample, error) {
	hierarchy := func() ([]cgroup1.Subsystem, error) {
		return []cgroup1.Subsystem{
			cgroup1.NewCpuacct(root),
			// Kernel memory counters are not reported, and newer kernels
			// drop their files; swap counters exist only with swap
			// accounting on.
			cgroup1.NewMemory(root, cgroup1.IgnoreModules("kmem", "kmem.tcp"), cgroup1.OptionalSwap()),
			cgroup1.NewPids(root),
		}, nil
	}
	cg, err := cgroup1.Load(cgroup1.StaticPath(group), cgroup1.WithHierarchy(hierarchy))
	if err != nil {
		if errors.Is(err, cgroup1.ErrCgroupDeleted) {
			return Sample{}, errdefs.ErrNotFound
		}
		return Sample{}, err
	}
	m, err := cg.Stat()
	if err != nil {
		return Sample{}, err
	}
	var s Sample
	for _, sub := range cg.Subsystems() {
		switch sub.Name() {
		case cgroup1.Cpuacct:
			if m.CPU != nil && m.CPU.Usage != nil {
				u := m.CPU.Usage
				s.CPU = &CPU{UsageNanos: u.Total, UserNanos: u.User, SystemNanos: u.Kernel}
			}
		case cgroup1.Pids:
			if m.Pids != nil {
				procs, err := countProcesses(filepath.Join(root, "pids", group))
				if err != nil {
					return Sample{}, err
				}
				// "max" may read as 0 or as a huge number: neither limits.
				s.Pids = &Pids{Current: m.Pids.Current, Processes: procs, Limit: m.Pids.Limit, Limited: m.Pids.Limit > 0 && limited(m.Pids.Limit)}
			}
		case cgroup1.Memory:
			if m.Memory == nil || m.Memory.Usage == nil {
				continue
			}
			mem := m.Memory
			s.Memory = &Memory{
				Usage:           mem.Usage.Usage,
				WorkingSet:      workingSet(mem.Usage.Usage, mem.TotalInactiveFile),
				RSS:             mem.TotalRSS,
				Cache:           mem.TotalCache,
				MappedFile:      mem.TotalMappedFile,
				MaxUsage:        mem.Usage.Max,
				Failcnt:         mem.Usage.Failcnt,
				PageFaults:      mem.TotalPgFault,
				MajorPageFaults: mem.TotalPgMajFault,
				Limit:           mem.Usage.Limit,
				Limited:         limited(mem.Usage.Limit),
			}
			if s.Memory.OOMKills, err = oomKillsV1(filepath.Join(root, "memory", group)); err != nil {
				return Sample{}, err
			}
			if swapAccounted(root) && mem.Swap != nil {
				s.Swap = swapV1(mem.Usage.Usage, mem.Usage.Limit, mem.Swap.Usage, mem.Swap.Limit)
			}
		}
	}
	return s, nil
}

// swapAccounted reports whether the v1 memory hierarchy counts swap: the
// memsw files exist only when it does.
func swapAccounted(root string) bool {
	_, err := os.Stat(filepath.Join(root, "memory", "memory.memsw.usage_in_bytes"))
	return err == nil
}

// swapV1 derives swap figures from v1's memory+swap counters: swap used is
// what memsw charges beyond memory, and the swap limit is the memsw limit
// beyond the memory limit (none if either is unlimited).
func swapV1(memUsage, memLimit, memswUsage, memswLimit uint64) *Swap {
	s := &Swap{}
	if memswUsage > memUsage {
		s.Usage = memswUsage - memUsage
	}
	if limited(memLimit) && limited(memswLimit) {
		s.Limited = true
		if memswLimit > memLimit {
			s.Limit = memswLimit - memLimit
		}
	}
	return s
}

// oomKillsV1 reads the oom_kill count of memory.oom_control (kernels
// before 4.13 have none: 0).
func oomKillsV1(dir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "memory.oom_control"))
	if err != nil {
		return 0, fmt.Errorf("read oom_control: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse oom_control: %w", err)
			}
			return n, nil
		}
	}
	return 0, nil
}
