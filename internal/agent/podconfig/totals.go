package podconfig

import (
	corev1 "k8s.io/api/core/v1"
)

// Resources is a pod's CPU and memory as a whole, aggregated the way the
// kubelet's PodRequests and PodLimits do it, without the pod's overhead
// (see WithOverhead).
type Resources struct {
	// CPURequest is the pod's CPU request in millicores.
	CPURequest int64
	// CPULimit is the pod's CPU limit in millicores, 0 for none.
	CPULimit int64
	// MemoryLimit is the pod's memory limit in bytes, 0 for none.
	MemoryLimit int64
	// CPULimitDeclared and MemoryLimitDeclared report whether that limit
	// binds the whole pod: every container declares it (a classic init
	// container counted together with the sidecars started before it), or
	// the pod sets a positive pod-level limit. The kubelet's
	// ResourceConfigForPod applies a Burstable pod's limit to its cgroup
	// only then.
	CPULimitDeclared, MemoryLimitDeclared bool
}

// PodResources aggregates the pod's resources as the kubelet's PodRequests
// and PodLimits do: app containers and sidecars add up, each classic init
// container runs alone beside the sidecars started before it, and the pod
// needs the larger of the two. A request missing where a limit is given is
// the limit (the API server's defaulting). A pod-level value, when the pod
// sets one, replaces the aggregate of that resource. The overhead is not
// included.
func PodResources(pod *corev1.Pod) Resources {
	r := Resources{CPULimitDeclared: true, MemoryLimitDeclared: true}
	seen := func(a amount) {
		if a.cpu <= 0 {
			r.CPULimitDeclared = false
		}
		if a.mem <= 0 {
			r.MemoryLimitDeclared = false
		}
	}
	req := aggregate(pod, effectiveRequests, func(amount) {})
	lim := aggregate(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits }, seen)
	if pr := pod.Spec.Resources; pr != nil {
		if q, ok := withDefaultRequests(pr.Requests, pr.Limits)[corev1.ResourceCPU]; ok {
			req.cpu = q.MilliValue()
		}
		if q, ok := pr.Limits[corev1.ResourceCPU]; ok {
			lim.cpu = q.MilliValue()
			if q.Sign() > 0 {
				r.CPULimitDeclared = true
			}
		}
		if q, ok := pr.Limits[corev1.ResourceMemory]; ok {
			lim.mem = q.Value()
			if q.Sign() > 0 {
				r.MemoryLimitDeclared = true
			}
		}
	}
	r.CPURequest, r.CPULimit, r.MemoryLimit = req.cpu, lim.cpu, lim.mem
	return r
}

// WithOverhead is r with the pod's overhead counted as the kubelet's
// ResourceConfigForPod counts it: added to the request, and to each limit
// that is set (an unset limit stays unset).
func (r Resources) WithOverhead(overhead corev1.ResourceList) Resources {
	if overhead == nil {
		return r
	}
	o := amountOf(overhead)
	r.CPURequest += o.cpu
	if r.CPULimit > 0 {
		r.CPULimit += o.cpu
	}
	if r.MemoryLimit > 0 {
		r.MemoryLimit += o.mem
	}
	return r
}

// amount is a CPU (millicores) and memory (bytes) pair.
type amount struct{ cpu, mem int64 }

func (a amount) plus(b amount) amount { return amount{a.cpu + b.cpu, a.mem + b.mem} }
func (a amount) max(b amount) amount  { return amount{max(a.cpu, b.cpu), max(a.mem, b.mem)} }

func amountOf(list corev1.ResourceList) amount {
	return amount{list.Cpu().MilliValue(), list.Memory().Value()}
}

// aggregate sums pick over the pod's containers (see PodResources),
// calling seen with each container's effective amount: an app container's
// or sidecar's own (a sidecar's including the sidecars before it), a
// classic init container's plus the sidecars running beside it. That is
// the kubelet's ContainerFn, which decides whether limits were declared.
func aggregate(pod *corev1.Pod, pick func(*corev1.Container) corev1.ResourceList, seen func(amount)) amount {
	var sum amount
	for i := range pod.Spec.Containers {
		a := amountOf(pick(&pod.Spec.Containers[i]))
		seen(a)
		sum = sum.plus(a)
	}
	var sidecars, initPeak amount
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		a := amountOf(pick(c))
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sum = sum.plus(a)
			sidecars = sidecars.plus(a)
			seen(sidecars)
			initPeak = initPeak.max(sidecars)
			continue
		}
		seen(a.plus(sidecars))
		initPeak = initPeak.max(a.plus(sidecars))
	}
	return sum.max(initPeak)
}
