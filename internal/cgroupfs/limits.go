package cgroupfs

import (
	"errors"
	"math"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/crib-dev/crib/internal/systemd"
)

// The kernel's and the kubelet's CPU bounds.
const (
	MinShares = 2
	MaxShares = 262144
	// DefaultPeriod is the CFS period in microseconds the kubelet uses.
	DefaultPeriod = 100000
	// DefaultShares is the kernel's cpu.shares of a new cgroup v1 cgroup.
	DefaultShares = 1024
	// DefaultWeight is the kernel's cpu.weight of a new cgroup v2 cgroup,
	// and systemd's CPUWeight when a unit sets none. It is not
	// SharesToWeight(DefaultShares), which is 39.
	DefaultWeight = 100
)

// Limits are the settings of a pod-level cgroup.
type Limits struct {
	// CPUShares is the cgroup v1 cpu.shares; on v2 it is converted to
	// cpu.weight. 0 is a new cgroup's default: DefaultShares on v1,
	// DefaultWeight on v2 and under systemd.
	CPUShares uint64
	// CPUQuota is the CFS quota in microseconds per CPUPeriod; -1 is no
	// quota.
	CPUQuota int64
	// CPUPeriod is the CFS period in microseconds.
	CPUPeriod uint64
	// Memory is the memory limit in bytes; -1 is no limit.
	Memory int64
}

// Unlimited is a cgroup without any limit beyond the given shares.
func Unlimited(shares uint64) Limits {
	return Limits{CPUShares: shares, CPUQuota: -1, CPUPeriod: DefaultPeriod, Memory: -1}
}

// Defaults are the limits of a new cgroup: none, and the default CPU
// share, which no figure of shares gives on both cgroup versions.
func Defaults() Limits { return Unlimited(0) }

// weight is the cpu.weight (or systemd CPUWeight) for l's shares.
func (l Limits) weight() uint64 {
	if l.CPUShares == 0 {
		return DefaultWeight
	}
	return SharesToWeight(l.CPUShares)
}

// SharesToWeight converts cpu.shares to cgroup v2 cpu.weight with the
// linear mapping runc and the kubelet use: [2, 262144] onto [1, 10000].
func SharesToWeight(shares uint64) uint64 {
	if shares == 0 {
		return 0
	}
	shares = min(max(shares, MinShares), MaxShares)
	return 1 + (shares-MinShares)*9999/(MaxShares-MinShares)
}

// Apply writes the limits to the cgroup at rel (a path below the
// hierarchies' roots).
func (h Hierarchies) Apply(rel string, l Limits) error {
	if h.Unified {
		return applyV2(filepath.Join(h.Roots[0], rel), l)
	}
	var errs []error
	if cpu := h.With("cpu.shares"); cpu != "" {
		errs = append(errs, applyCPUV1(filepath.Join(cpu, rel), l))
	}
	if mem := h.With("memory.limit_in_bytes"); mem != "" {
		errs = append(errs, WriteFile(filepath.Join(mem, rel, "memory.limit_in_bytes"), strconv.FormatInt(l.Memory, 10)))
	}
	return errors.Join(errs...)
}

// applyCPUV1 writes shares, period and quota. The kernel checks a quota
// against the period already set, so when the period write is refused the
// quota goes first.
func applyCPUV1(dir string, l Limits) error {
	shares := l.CPUShares
	if shares == 0 {
		shares = DefaultShares
	}
	if err := WriteFile(filepath.Join(dir, "cpu.shares"), strconv.FormatUint(shares, 10)); err != nil {
		return err
	}
	period := filepath.Join(dir, "cpu.cfs_period_us")
	quota := filepath.Join(dir, "cpu.cfs_quota_us")
	p := strconv.FormatUint(l.CPUPeriod, 10)
	q := strconv.FormatInt(l.CPUQuota, 10)
	if err := WriteFile(period, p); err != nil {
		if !errors.Is(err, syscall.EINVAL) {
			return err
		}
		if err := WriteFile(quota, q); err != nil {
			return err
		}
		return WriteFile(period, p)
	}
	return WriteFile(quota, q)
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
		WriteFile(filepath.Join(dir, "cpu.weight"), strconv.FormatUint(l.weight(), 10)),
		WriteFile(filepath.Join(dir, "cpu.max"), quota+" "+strconv.FormatUint(l.CPUPeriod, 10)),
		WriteFile(filepath.Join(dir, "memory.max"), mem),
	)
}

// systemd's CPUQuota is a percentage of one CPU, so CPUQuotaPerSecUSec is
// kept in steps of 1% of a second.
const quotaStep = 10000 // microseconds per second

// SliceResources are the unit properties of a cgroup with limits l, as
// the kubelet's systemd driver (runc's libcontainer) sets them: cpu
// shares as CPUWeight (no shares as systemd's default weight), the CFS quota per second of wall time rounded up
// to systemd's precision, and the memory limit; a limit not set is lifted
// with Unlimited, so that a resize that drops it takes effect.
func SliceResources(l Limits) systemd.Resources {
	r := systemd.Resources{
		CPUWeight:          l.weight(),
		CPUQuotaPerSecUSec: systemd.Unlimited,
		MemoryMax:          systemd.Unlimited,
	}
	if l.CPUQuota > 0 {
		r.CPUQuotaPerSecUSec = QuotaPerSecond(uint64(l.CPUQuota), l.CPUPeriod)
	}
	if l.Memory > 0 {
		r.MemoryMax = uint64(l.Memory)
	}
	return r
}

// QuotaPerSecond converts a CFS quota per period (both in microseconds;
// period 0 is the default) to microseconds per second, rounded up to a
// whole percent as runc does, so a quota is never tightened. A quota too
// large to convert is in effect none.
func QuotaPerSecond(quota, period uint64) uint64 {
	if period == 0 {
		period = DefaultPeriod
	}
	if quota > math.MaxUint64/1_000_000 {
		return systemd.Unlimited
	}
	usec := quota * 1_000_000 / period
	if usec%quotaStep != 0 {
		usec = (usec/quotaStep + 1) * quotaStep
	}
	return usec
}
