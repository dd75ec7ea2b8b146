package podconfig

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// QOSClass is the pod's quality-of-service class, computed the way the
// kubelet's GetPodQOS does from cpu and memory only: BestEffort when no
// container requests or limits either, Guaranteed when every container
// limits both and every request equals its limit, Burstable otherwise.
// Pod-level resources, when the pod sets them, decide instead of the
// containers'. A container (or pod) that gives a limit but no request counts as
// requesting its limit, which is what the API server's defaulting would
// have written into the spec. The class is always computed from the spec,
// never read from pod.Status.QOSClass, so that the status the agent reports,
// the pod's cgroup and its containers' OOM scores agree. It is the agent's
// only QoS computation: status and podcgroup call it.
func QOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	requests := map[corev1.ResourceName]resource.Quantity{}
	limits := map[corev1.ResourceName]resource.Quantity{}
	guaranteed := true
	if r := pod.Spec.Resources; r != nil && (len(r.Requests) > 0 || len(r.Limits) > 0) {
		addPositive(requests, withDefaultRequests(r.Requests, r.Limits))
		addPositive(limits, r.Limits)
		if len(r.Limits) > 0 && !hasCPUAndMemory(r.Limits) {
			guaranteed = false
		}
	} else {
		for _, c := range allContainers(pod) {
			addPositive(requests, effectiveRequests(c))
			addPositive(limits, c.Resources.Limits)
			if !hasCPUAndMemory(c.Resources.Limits) {
				guaranteed = false
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// allContainers lists the app containers then the init containers, the
// containers whose resources count for the pod.
func allContainers(pod *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	return out
}

// qosResource reports whether a resource takes part in QoS.
func qosResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory
}

// addPositive adds the positive cpu and memory quantities of list to sum.
func addPositive(sum map[corev1.ResourceName]resource.Quantity, list corev1.ResourceList) {
	for name, q := range list {
		if !qosResource(name) || q.Sign() <= 0 {
			continue
		}
		if prev, ok := sum[name]; ok {
			q = q.DeepCopy()
			q.Add(prev)
		}
		sum[name] = q
	}
}

// hasCPUAndMemory reports whether list limits both cpu and memory with
// positive amounts.
func hasCPUAndMemory(list corev1.ResourceList) bool {
	cpu, okCPU := list[corev1.ResourceCPU]
	mem, okMem := list[corev1.ResourceMemory]
	return okCPU && okMem && cpu.Sign() > 0 && mem.Sign() > 0
}

// effectiveRequests is the container's requests with the API server's
// defaulting applied: a resource that is limited but not requested is
// requested at its limit.
func effectiveRequests(c *corev1.Container) corev1.ResourceList {
	return withDefaultRequests(c.Resources.Requests, c.Resources.Limits)
}

// withDefaultRequests is requests with every limited but unrequested
// resource requested at its limit.
func withDefaultRequests(requests, limits corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range requests {
		out[name] = q
	}
	for name, q := range limits {
		if _, ok := out[name]; !ok {
			out[name] = q
		}
	}
	return out
}

// isSidecar reports whether c is one of the pod's restartable init
// containers.
func isSidecar(pod *corev1.Pod, c *corev1.Container) bool {
	if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		return false
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return true
		}
	}
	return false
}
