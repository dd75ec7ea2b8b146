package podcgroup

import (
	"errors"
	"path/filepath"
	"strconv"
	"syscall"
)

// apply writes the limits to the cgroup at rel (a path below the
// hierarchies' roots).
func (h hierarchies) apply(rel string, l Limits) error {
	if h.unified {
		return applyV2(filepath.Join(h.roots[0], rel), l)
	}
	var errs []error
	if cpu := h.with("cpu.shares"); cpu != "" {
		errs = append(errs, applyCPUV1(filepath.Join(cpu, rel), l))
	}
	if mem := h.with("memory.limit_in_bytes"); mem != "" {
		errs = append(errs, writeFile(filepath.Join(mem, rel, "memory.limit_in_bytes"), strconv.FormatInt(l.Memory, 10)))
	}
	return errors.Join(errs...)
}

// applyCPUV1 writes shares, period and quota. The kernel checks a quota
// against the period already set, so when the period write is refused the
// quota goes first.
func applyCPUV1(dir string, l Limits) error {
	if err := writeFile(filepath.Join(dir, "cpu.shares"), strconv.FormatUint(l.CPUShares, 10)); err != nil {
		return err
	}
	period := filepath.Join(dir, "cpu.cfs_period_us")
	quota := filepath.Join(dir, "cpu.cfs_quota_us")
	p := strconv.FormatUint(l.CPUPeriod, 10)
	q := strconv.FormatInt(l.CPUQuota, 10)
	if err := writeFile(period, p); err != nil {
		if !errors.Is(err, syscall.EINVAL) {
			return err
		}
		if err := writeFile(quota, q); err != nil {
			return err
		}
		return writeFile(period, p)
	}
	return writeFile(quota, q)
}

// applyV2 writes cpu.weight, cpu.max and memory.max.
func applyV2(dir string, l Limits) error {
	quota := "max"
	if l.CPUQuota > 0 {
		quota = strconv.FormatInt(l.CPUQuota, 10)
	}
	mem := "max"
	if l.Memory > 0 {
		mem = strconv.FormatInt(l.Memory, 10)
	}
	return errors.Join(
		writeFile(filepath.Join(dir, "cpu.weight"), strconv.FormatUint(sharesToWeight(l.CPUShares), 10)),
		writeFile(filepath.Join(dir, "cpu.max"), quota+" "+strconv.FormatUint(l.CPUPeriod, 10)),
		writeFile(filepath.Join(dir, "memory.max"), mem),
	)
}
