package status

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// QOSClass returns the pod's quality of service class from the cpu and
// memory requests and limits of all its containers: BestEffort when none
// is set, Guaranteed when every container limits both and requests what it
// limits (a missing request defaults to the limit), Burstable otherwise.
func QOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	set, guaranteed := false, true
	all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range all {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := nonZero(c.Resources.Requests, name)
			lim, hasLim := nonZero(c.Resources.Limits, name)
			if hasReq || hasLim {
				set = true
			}
			if !hasLim || (hasReq && req.Cmp(lim) != 0) {
				guaranteed = false
			}
		}
	}
	switch {
	case !set:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	default:
		return corev1.PodQOSBurstable
	}
}

func nonZero(list corev1.ResourceList, name corev1.ResourceName) (resource.Quantity, bool) {
	q, ok := list[name]
	if !ok || q.IsZero() {
		return resource.Quantity{}, false
	}
	return q, true
}
