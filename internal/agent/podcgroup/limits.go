package podcgroup

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/cgroupfs"
)

// The kubelet's CPU constants.
const (
	sharesPerCPU = 1024
	milliPerCPU  = 1000
	minCFSQuota  = 1000 // microseconds
)

// PodLimits computes the pod cgroup's settings as the kubelet's
// ResourceConfigForPod does. BestEffort pods get the minimum shares and no
// limits. Other pods get shares from the pod's CPU request (overhead
// included); Guaranteed pods always, Burstable pods only when every
// container (and every init container, counted with the sidecars running
// beside it) limits that resource, or the pod sets a pod-level limit, also
// get the CFS quota of the pod's CPU limit and the pod's memory limit
// (overhead added to a limit that is set). A limit that is not declared is
// written as "none", so that a resize that drops a limit lifts it.
func PodLimits(pod *corev1.Pod) cgroupfs.Limits {
	qos := podconfig.QOSClass(pod)
	if qos == corev1.PodQOSBestEffort {
		return cgroupfs.Unlimited(cgroupfs.MinShares)
	}
	r := podconfig.PodResources(pod).WithOverhead(pod.Spec.Overhead)
	l := cgroupfs.Unlimited(milliCPUToShares(r.CPURequest))
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
	return uint64(min(max(shares, cgroupfs.MinShares), cgroupfs.MaxShares))
}

// milliCPUToQuota converts a CPU limit to a CFS quota for the default
// period, at least the kernel's 1 ms; no limit is no quota.
func milliCPUToQuota(milli int64) int64 {
	if milli <= 0 {
		return -1
	}
	return max(milli*cgroupfs.DefaultPeriod/milliPerCPU, minCFSQuota)
}
