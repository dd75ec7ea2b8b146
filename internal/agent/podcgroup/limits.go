package podcgroup

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/cgroupfs"
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
	l := cgroupfs.Unlimited(uint64(podconfig.MilliCPUToShares(r.CPURequest)))
	if qos == corev1.PodQOSGuaranteed || r.CPULimitDeclared {
		// The kubelet's "no quota" (0) stays Unlimited's -1: written, so
		// that a resize that drops the limit lifts it.
		if quota := podconfig.MilliCPUToQuota(r.CPULimit, cgroupfs.DefaultPeriod); quota > 0 {
			l.CPUQuota = quota
		}
	}
	if qos == corev1.PodQOSGuaranteed || r.MemoryLimitDeclared {
		if r.MemoryLimit > 0 {
			l.Memory = r.MemoryLimit
		}
	}
	return l
}
