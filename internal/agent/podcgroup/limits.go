package podcgroup

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/podconfig"
)

// The kubelet's CPU constants.
const (
	minShares    = 2
	maxShares    = 262144
	sharesPerCPU = 1024
	milliPerCPU  = 1000
	cfsPeriod    = 100000 // microseconds
	minCFSQuota  = 1000   // microseconds
)

// Limits are the settings of a pod cgroup.
type Limits struct {
	// CPUShares is the cgroup v1 cpu.shares; on v2 it is converted to
	// cpu.weight.
	CPUShares uint64
	// CPUQuota is the CFS quota in microseconds per CPUPeriod; -1 is no
	// quota.
	CPUQuota int64
	// CPUPeriod is the CFS period in microseconds.
	CPUPeriod uint64
	// Memory is the memory limit in bytes; -1 is no limit.
	Memory int64
}

// unlimited is a cgroup without any limit beyond the given shares.
func unlimited(shares uint64) Limits {
	return Limits{CPUShares: shares, CPUQuota: -1, CPUPeriod: cfsPeriod, Memory: -1}
}

// PodLimits computes the pod cgroup's settings as the kubelet's
// ResourceConfigForPod does. BestEffort pods get the minimum shares and no
// limits. Other pods get shares from the pod's CPU request (overhead
// included); Guaranteed pods always, Burstable pods only when every
// container (and every init container, counted with the sidecars running
// beside it) limits that resource, or the pod sets a pod-level limit, also
// get the CFS quota of the pod's CPU limit and the pod's memory limit
// (overhead added to a limit that is set). A limit that is not declared is
// written as "none", so that a resize that drops a limit lifts it.
func PodLimits(pod *corev1.Pod) Limits {
	qos := podconfig.QOSClass(pod)
	if qos == corev1.PodQOSBestEffort {
		return unlimited(minShares)
	}
	r := podconfig.PodResources(pod).WithOverhead(pod.Spec.Overhead)
	l := unlimited(milliCPUToShares(r.CPURequest))
	if qos == corev1.PodQOSGuaranteed || r.CPULimitDeclared {
		l.CPUQuota = milliCPUToQuota(r.CPULimit)
	}
	if qos == corev1.PodQOSGuaranteed || r.MemoryLimitDeclared {
		if r.MemoryLimit > 0 {
			l.Memory = r.MemoryLimit
		}
	}
	return l
}

// milliCPUToShares converts a CPU request to cpu.shares, within [2, 262144].
func milliCPUToShares(milli int64) uint64 {
	shares := milli * sharesPerCPU / milliPerCPU
	return uint64(min(max(shares, minShares), maxShares))
}

// milliCPUToQuota converts a CPU limit to a CFS quota for the default
// period, at least the kernel's 1 ms; no limit is no quota.
func milliCPUToQuota(milli int64) int64 {
	if milli <= 0 {
		return -1
	}
	return max(milli*cfsPeriod/milliPerCPU, minCFSQuota)
}

// sharesToWeight converts cpu.shares to cgroup v2 cpu.weight with the
// linear mapping runc and the kubelet use: [2, 262144] onto [1, 10000].
func sharesToWeight(shares uint64) uint64 {
	if shares == 0 {
		return 0
	}
	shares = min(max(shares, minShares), maxShares)
	return 1 + (shares-minShares)*9999/(maxShares-minShares)
}
