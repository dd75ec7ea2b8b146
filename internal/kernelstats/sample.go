package kernelstats

import "time"

// unlimited is the size from which a memory limit counts as no limit: the
// kernel reports "no limit" as a huge page-rounded number, not MaxUint64.
const unlimited = uint64(1) << 62

// Sample is one reading of a cgroup. A field is nil when its controller is
// not available for the cgroup.
type Sample struct {
	// Time is when the reading started.
	Time   time.Time
	CPU    *CPU
	Memory *Memory
	// Swap is nil when the kernel does not account swap for the cgroup.
	Swap *Swap
	Pids *Pids
	// IO is nil where the kernel gives no I/O pressure (cgroup v1, psi=0).
	IO *IO
}

// IO is a cgroup's block I/O pressure.
type IO struct {
	Pressure *Pressure
}

// CPU is cumulative CPU time.
type CPU struct {
	// UsageNanos is the CPU time used by every task of the cgroup, in
	// nanoseconds, summed over all cores.
	UsageNanos uint64
	// UserNanos and SystemNanos split UsageNanos by mode.
	UserNanos, SystemNanos uint64
	// Throttling is nil where the CPU controller's figures are not read
	// (cgroup v1) or not enabled for the cgroup.
	Throttling *Throttling
	// Pressure is nil where the kernel gives no PSI (cgroup v1, psi=0).
	Pressure *Pressure
}

// Throttling is the CFS bandwidth control's count of enforcement periods
// and of the time the cgroup was throttled.
type Throttling struct {
	Periods          uint64
	ThrottledPeriods uint64
	ThrottledNanos   uint64
}

// Pressure is a cgroup's pressure stall information for one resource.
type Pressure struct {
	// Some is time in which at least one task stalled, Full time in which
	// all did.
	Some, Full PressureData
}

// PressureData is one line of a *.pressure file.
type PressureData struct {
	// TotalNanos is the stall time since the cgroup was made.
	TotalNanos uint64
	// Avg10, Avg60 and Avg300 are the stalled share of the last 10, 60
	// and 300 seconds, in percent.
	Avg10, Avg60, Avg300 float64
}

// Memory is memory usage in bytes.
type Memory struct {
	// Usage is all memory charged to the cgroup, page cache included.
	Usage uint64
	// WorkingSet is Usage less the inactive file cache, the figure the
	// kubelet evicts on.
	WorkingSet uint64
	// RSS is anonymous memory (v1 total_rss, v2 anon).
	RSS uint64
	// Cache is the page cache (v1 total_cache, v2 file), MappedFile the
	// part of it mapped into processes.
	Cache, MappedFile uint64
	// MaxUsage is the peak of Usage (v1 max_usage_in_bytes, v2
	// memory.peak); 0 where the kernel does not keep it.
	MaxUsage uint64
	// Failcnt counts the times the limit was hit (v1 failcnt, v2 the max
	// event); OOMKills the processes the OOM killer killed in the cgroup
	// (v2 only).
	Failcnt, OOMKills uint64
	// PageFaults and MajorPageFaults count faults since the cgroup was made.
	PageFaults      uint64
	MajorPageFaults uint64
	// Limit is the memory limit; it means something only when Limited.
	Limit   uint64
	Limited bool
	// Pressure is nil where the kernel gives no PSI.
	Pressure *Pressure
}

// Available is how much more the working set may grow before the limit, or
// 0 when there is no limit (or the working set is over it).
func (m Memory) Available() uint64 {
	if !m.Limited || m.WorkingSet >= m.Limit {
		return 0
	}
	return m.Limit - m.WorkingSet
}

// Swap is swap usage in bytes.
type Swap struct {
	Usage uint64
	// Limit is the swap the cgroup may use; it means something only when
	// Limited. A limit of 0 forbids swap.
	Limit   uint64
	Limited bool
}

// Available is the swap the cgroup may still use, or 0 when unlimited.
func (s Swap) Available() uint64 {
	if !s.Limited || s.Usage >= s.Limit {
		return 0
	}
	return s.Limit - s.Usage
}

// Pids counts the cgroup's tasks.
type Pids struct {
	// Current counts the tasks (threads) of the cgroup and its children.
	Current uint64
	// Processes counts the processes of the cgroup and its children.
	Processes uint64
	// Limit is pids.max; it means something only when Limited.
	Limit   uint64
	Limited bool
}

// limited reports whether a kernel limit is a real one.
func limited(v uint64) bool { return v < unlimited }

// workingSet is usage less inactive file cache, never below zero.
func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile >= usage {
		return 0
	}
	return usage - inactiveFile
}
