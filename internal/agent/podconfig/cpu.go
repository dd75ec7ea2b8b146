package podconfig

// The kubelet's CPU constants (pkg/kubelet/cm: MinShares, MaxShares,
// SharesPerCPU, MilliCPUToCPU, QuotaPeriod, MinQuotaPeriod).
const (
	MinShares = 2
	MaxShares = 262144
	// QuotaPeriod is the CFS period, in microseconds, every quota here is
	// computed for: the kernel's default of 100 ms.
	QuotaPeriod = 100000

	sharesPerCPU = 1024
	milliPerCPU  = 1000
	minQuota     = 1000 // microseconds: the kernel refuses less
)

// MilliCPUToShares converts a CPU request in millicores to cgroup v1
// cpu.shares, within [MinShares, MaxShares]: no request gets the minimum
// (not the kernel's 1024 of an unset value), as the kubelet's
// MilliCPUToShares does. Both the CRI resources of a container or sandbox
// and the agent's pod and QoS cgroups take their shares from here.
func MilliCPUToShares(milli int64) int64 {
	if milli <= 0 {
		return MinShares
	}
	return min(max(milli*sharesPerCPU/milliPerCPU, MinShares), MaxShares)
}

// MilliCPUToQuota converts a CPU limit in millicores to a CFS quota in
// microseconds per period, at least the kernel's 1 ms. No limit (zero) is
// no quota, 0, as the kubelet's MilliCPUToQuota answers and as the CRI's
// cpu_quota means; a writer of cgroup files that spells "no quota"
// otherwise (-1, "max") translates it there.
func MilliCPUToQuota(milli, period int64) int64 {
	if milli <= 0 {
		return 0
	}
	return max(milli*period/milliPerCPU, minQuota)
}
