package podconfig

import (
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The kubelet's OOM constants.
const (
	guaranteedOOMAdj = -997
	bestEffortOOMAdj = 1000
	nodeCriticalPrio = "system-node-critical"
)

// linuxResources is the kubelet's calculateLinuxResources: shares from the
// CPU request, quota and period from the CPU limit, the memory limit as is.
func linuxResources(cpuRequestMilli, cpuLimitMilli, memoryLimit int64) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{
		CpuShares: MilliCPUToShares(cpuRequestMilli),
		CpuPeriod: QuotaPeriod,
		CpuQuota:  MilliCPUToQuota(cpuLimitMilli, QuotaPeriod),
	}
	if memoryLimit > 0 {
		r.MemoryLimitInBytes = memoryLimit
	}
	return r
}

// ContainerResources is the CRI resources container c of pod is created
// with, and what a resize in place sets (UpdateContainerResources).
func ContainerResources(pod *corev1.Pod, c *corev1.Container, opts Options) *runtimeapi.LinuxContainerResources {
	return containerResources(pod, c, QOSClass(pod), opts.NodeMemoryBytes)
}

// containerResources converts the container's requests and limits to CRI
// resources; an unset container limit falls back to the pod-level limit.
func containerResources(pod *corev1.Pod, c *corev1.Container, qos corev1.PodQOSClass, nodeMemory int64) *runtimeapi.LinuxContainerResources {
	req := effectiveRequests(c)
	cpuLimit := c.Resources.Limits.Cpu().MilliValue()
	memLimit := c.Resources.Limits.Memory().Value()
	if pr := pod.Spec.Resources; pr != nil {
		if cpuLimit == 0 {
			cpuLimit = pr.Limits.Cpu().MilliValue()
		}
		if memLimit == 0 {
			memLimit = pr.Limits.Memory().Value()
		}
	}
	r := linuxResources(req.Cpu().MilliValue(), cpuLimit, memLimit)
	r.OomScoreAdj = oomScoreAdj(pod, c, qos, nodeMemory)
	return r
}

// oomScoreAdj is the kubelet's GetContainerOOMScoreAdjust. Node-critical
// and Guaranteed pods get -997, BestEffort 1000, and a Burstable container
// 1000 minus its memory request in thousandths of the node's memory,
// clamped to [3, 999] so that it stays between the two; a sidecar never
// scores above the smallest regular container. With the node's memory
// unknown (zero) every Burstable container scores 999, as one requesting
// nothing would.
func oomScoreAdj(pod *corev1.Pod, c *corev1.Container, qos corev1.PodQOSClass, nodeMemory int64) int64 {
	if pod.Spec.PriorityClassName == nodeCriticalPrio {
		return guaranteedOOMAdj
	}
	switch qos {
	case corev1.PodQOSGuaranteed:
		return guaranteedOOMAdj
	case corev1.PodQOSBestEffort:
		return bestEffortOOMAdj
	}
	score := func(memRequest int64) int64 {
		if nodeMemory <= 0 {
			return bestEffortOOMAdj
		}
		return 1000 - 1000*memRequest/nodeMemory
	}
	adj := score(memoryRequest(c))
	if isSidecar(pod, c) && len(pod.Spec.Containers) > 0 {
		minReq := memoryRequest(&pod.Spec.Containers[0])
		for i := range pod.Spec.Containers {
			minReq = min(minReq, memoryRequest(&pod.Spec.Containers[i]))
		}
		adj = min(adj, score(minReq))
	}
	if adj < 1000+guaranteedOOMAdj {
		return 1000 + guaranteedOOMAdj
	}
	if adj >= bestEffortOOMAdj {
		return bestEffortOOMAdj - 1
	}
	return adj
}

// memoryRequest is the container's effective memory request in bytes.
func memoryRequest(c *corev1.Container) int64 {
	req := effectiveRequests(c)
	return req.Memory().Value()
}

// sandboxResources is LinuxPodSandboxConfig.Resources: PodResources,
// overhead excluded as the kubelet excludes it, converted like a
// container's.
func sandboxResources(pod *corev1.Pod) *runtimeapi.LinuxContainerResources {
	r := PodResources(pod)
	return linuxResources(r.CPURequest, r.CPULimit, r.MemoryLimit)
}

// sandboxOverhead is LinuxPodSandboxConfig.Overhead: the pod's overhead
// treated as both request and limit, empty when the pod declares none.
func sandboxOverhead(pod *corev1.Pod) *runtimeapi.LinuxContainerResources {
	if pod.Spec.Overhead == nil {
		return &runtimeapi.LinuxContainerResources{}
	}
	cpu := pod.Spec.Overhead.Cpu().MilliValue()
	return linuxResources(cpu, cpu, pod.Spec.Overhead.Memory().Value())
}

// podCgroupParent is the pod's cgroup in the kubelet's layout under
// parent; see Options.CgroupParent.
func podCgroupParent(pod *corev1.Pod, qos corev1.PodQOSClass, parent string) string {
	if parent == "" {
		return ""
	}
	tier := ""
	switch qos {
	case corev1.PodQOSBurstable:
		tier = "burstable"
	case corev1.PodQOSBestEffort:
		tier = "besteffort"
	}
	uid := string(pod.UID)
	if base, ok := strings.CutSuffix(parent, ".slice"); ok {
		name := base
		if tier != "" {
			name += "-" + tier
		}
		return name + "-pod" + strings.ReplaceAll(uid, "-", "_") + ".slice"
	}
	return path.Join(parent, tier, "pod"+uid)
}
