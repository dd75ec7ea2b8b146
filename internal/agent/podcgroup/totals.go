package podcgroup

import (
	corev1 "k8s.io/api/core/v1"
)

// totals are a pod's aggregate CPU request and limits and whether every
// container declared each limit.
type totals struct {
	cpuRequest, cpuLimit, memLimit int64
	cpuDeclared, memDeclared       bool
}

// amount is a CPU (millicores) and memory (bytes) pair.
type amount struct{ cpu, mem int64 }

func (a amount) plus(b amount) amount { return amount{a.cpu + b.cpu, a.mem + b.mem} }
func (a amount) max(b amount) amount  { return amount{max(a.cpu, b.cpu), max(a.mem, b.mem)} }

func amountOf(list corev1.ResourceList) amount {
	return amount{list.Cpu().MilliValue(), list.Memory().Value()}
}

// podTotals aggregates the pod's resources the way the kubelet's
// PodRequests and PodLimits do: app containers and sidecars add up, each
// classic init container runs alone beside the sidecars started before
// it, the pod needs the larger of the two; pod-level values, when set,
// replace the aggregate; the overhead is added to the request and to a
// limit that is set. seen is called with every container's effective
// limits (an init container's include the sidecars beside it), as the
// kubelet's ContainerFn is, to decide whether limits were declared.
func podTotals(pod *corev1.Pod) totals {
	t := totals{cpuDeclared: true, memDeclared: true}
	seen := func(a amount) {
		if a.cpu <= 0 {
			t.cpuDeclared = false
		}
		if a.mem <= 0 {
			t.memDeclared = false
		}
	}
	req := aggregate(pod, requestsOf, func(amount) {})
	lim := aggregate(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits }, seen)
	if pr := pod.Spec.Resources; pr != nil {
		podReq := withDefaultRequests(pr.Requests, pr.Limits)
		if q, ok := podReq[corev1.ResourceCPU]; ok {
			req.cpu = q.MilliValue()
		}
		if q, ok := pr.Limits[corev1.ResourceCPU]; ok && q.Sign() > 0 {
			lim.cpu = q.MilliValue()
			t.cpuDeclared = true
		}
		if q, ok := pr.Limits[corev1.ResourceMemory]; ok && q.Sign() > 0 {
			lim.mem = q.Value()
			t.memDeclared = true
		}
	}
	if oh := pod.Spec.Overhead; oh != nil {
		o := amountOf(oh)
		req = req.plus(o)
		if lim.cpu > 0 {
			lim.cpu += o.cpu
		}
		if lim.mem > 0 {
			lim.mem += o.mem
		}
	}
	t.cpuRequest, t.cpuLimit, t.memLimit = req.cpu, lim.cpu, lim.mem
	return t
}

// aggregate sums pick over the pod's containers (see podTotals), calling
// seen with each container's effective amount.
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

// requestsOf is the container's requests with the API server's defaulting
// applied: a limited but unrequested resource is requested at its limit.
func requestsOf(c *corev1.Container) corev1.ResourceList {
	return withDefaultRequests(c.Resources.Requests, c.Resources.Limits)
}

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
