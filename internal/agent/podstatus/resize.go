package podstatus

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/plan"
	"github.com/crib-dev/crib/internal/agent/podconfig"
)

// ResizePending says why the latest resize of a pod's containers is not
// allocated: Reason is corev1.PodReasonInfeasible or PodReasonDeferred.
type ResizePending struct {
	Reason, Message string
}

// allocatedPod is the pod as the node allocated it.
func allocatedPod(f Facts) *corev1.Pod {
	if f.Allocated != nil {
		return f.Allocated
	}
	return f.Pod
}

// allocatedContainer is spec's container as the node allocated it.
func allocatedContainer(f Facts, spec *corev1.Container, isInit bool) *corev1.Container {
	if f.Allocated == nil {
		return spec
	}
	list := f.Allocated.Spec.Containers
	if isInit {
		list = f.Allocated.Spec.InitContainers
	}
	for i := range list {
		if list[i].Name == spec.Name {
			return &list[i]
		}
	}
	return spec
}

// fillResources sets a container status's allocatedResources (the
// allocated requests) and resources as the kubelet reports them: for a
// running instance whose runtime reports its resources, the CPU request
// (from shares), the CPU limit (from quota and period) and the memory
// limit it actually runs with; everything else, and any container not
// running, as allocated.
func fillResources(f Facts, spec *corev1.Container, isInit bool, newest *plan.Container, cs *corev1.ContainerStatus) {
	alloc := allocatedContainer(f, spec, isInit)
	if len(alloc.Resources.Requests) > 0 {
		cs.AllocatedResources = alloc.Resources.Requests.DeepCopy()
	}
	res := alloc.Resources.DeepCopy()
	if newest != nil && newest.State == plan.ContainerRunning && newest.Resources != nil {
		act, want := newest.Resources, podconfig.ContainerResources(allocatedPod(f), alloc, podconfig.Options{})
		// A value that is what the allocation converts to is shown as
		// allocated, so that a done resize reads exactly as asked.
		if _, ok := res.Requests[corev1.ResourceCPU]; ok && act.CPUShares != want.CpuShares && act.CPUShares >= 2 {
			res.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity((act.CPUShares*1000+1023)/1024, resource.DecimalSI)
		}
		if _, ok := res.Limits[corev1.ResourceCPU]; ok && act.CPUQuota != want.CpuQuota && act.CPUQuota > 0 && act.CPUPeriod > 0 {
			res.Limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(act.CPUQuota*1000/act.CPUPeriod, resource.DecimalSI)
		}
		if _, ok := res.Limits[corev1.ResourceMemory]; ok && act.MemoryLimit != want.MemoryLimitInBytes && act.MemoryLimit > 0 {
			res.Limits[corev1.ResourceMemory] = *resource.NewQuantity(act.MemoryLimit, resource.BinarySI)
		}
	}
	if len(res.Requests) > 0 || len(res.Limits) > 0 {
		cs.Resources = res
	}
}

// resizeInProgress reports whether a running container of the pod does
// not run with the resources the node allocated to it yet.
func resizeInProgress(f Facts) bool {
	pod := allocatedPod(f)
	check := func(specs []corev1.Container, isInit bool) bool {
		for i := range specs {
			inst := instances(f.Observed, specs[i].Name, isInit)
			if len(inst) == 0 || inst[0].State != plan.ContainerRunning || inst[0].Resources == nil {
				continue
			}
			if !sameResources(*inst[0].Resources, podconfig.ContainerResources(pod, &specs[i], podconfig.Options{})) {
				return true
			}
		}
		return false
	}
	var sidecars []corev1.Container
	for _, c := range pod.Spec.InitContainers {
		if IsSidecar(&c) {
			sidecars = append(sidecars, c)
		}
	}
	return check(pod.Spec.Containers, false) || check(sidecars, true)
}

func sameResources(act plan.Resources, want *runtimeapi.LinuxContainerResources) bool {
	return act.CPUShares == want.CpuShares && act.CPUQuota == want.CpuQuota &&
		act.CPUPeriod == want.CpuPeriod && act.MemoryLimit == want.MemoryLimitInBytes
}

// resizeConditions are the kubelet's resize conditions, each present only
// while true: PodResizePending while a resize is not allocated,
// PodResizeInProgress while one allocated is not what the containers run
// with (reason Error when the last attempt failed). A finished pod has
// neither.
func resizeConditions(f Facts, st *corev1.PodStatus) []corev1.PodCondition {
	if isTerminal(st.Phase) {
		return nil
	}
	var out []corev1.PodCondition
	if p := f.ResizePending; p != nil {
		out = append(out, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: p.Reason, Message: p.Message})
	}
	if resizeInProgress(f) {
		c := corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}
		if f.ResizeError != "" {
			c.Reason, c.Message = corev1.PodReasonError, f.ResizeError
		}
		out = append(out, c)
	}
	return out
}
