package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/crib-dev/crib/internal/agent/podconfig"
)

// rejection is why a pod was not admitted to this node, in the kubelet's
// words: the pod's status shows it as Failed with this reason.
type rejection struct {
	Reason  string
	Message string
}

// admit decides, once per pod version, whether this node can run the pod
// beside the pods already admitted: the kubelet's resource fit (requests
// against the node's CPUs and memory) and host port checks. The decision
// sticks until the manifest changes. It returns the version of the pod to
// run: pod itself, or while a resize of it is pending, the version the
// node last allocated.
//
// A version that changes only containers' resources (a resize) is never
// rejected: the pod keeps running as allocated, and the resize waits,
// Infeasible when the pod alone would not fit the node, Deferred when it
// does not fit beside the others; a Deferred one is tried again at every
// sync, as the kubelet does.
func (a *Agent) admit(rec podRecord) admission {
	adm := a.table.admit(rec.uid, rec.version, rec.spec, a.cfg.PodConfig.NodeMilliCPU, a.cfg.PodConfig.NodeMemoryBytes)
	if r := adm.newlyPending; r != nil {
		a.log.Info("pod resize pending", "pod", podKey(rec.spec), "reason", r.Reason, "message", r.Message)
	}
	if r := adm.rejected; r != nil && adm.newlyRejected {
		a.log.Warn("pod rejected", "pod", podKey(rec.spec), "reason", r.Reason, "message", r.Message)
	}
	return adm
}

// onlyResized reports whether pod differs from allocated at most in the
// resources of its app containers and sidecars, without changing its QoS
// class: what the kubelet's resize accepts.
func onlyResized(allocated, pod *corev1.Pod) bool {
	if len(allocated.Spec.Containers) != len(pod.Spec.Containers) ||
		len(allocated.Spec.InitContainers) != len(pod.Spec.InitContainers) ||
		podconfig.QOSClass(allocated) != podconfig.QOSClass(pod) {
		return false
	}
	withOld := pod.DeepCopy()
	for i := range withOld.Spec.Containers {
		withOld.Spec.Containers[i].Resources = allocated.Spec.Containers[i].Resources
	}
	for i := range withOld.Spec.InitContainers {
		if c := &withOld.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			c.Resources = allocated.Spec.InitContainers[i].Resources
		}
	}
	return podEqual(withOld, allocated)
}

// resizeFits checks a resized pod's requests as the kubelet checks a
// resize: Infeasible when they exceed the node's capacity on their own,
// Deferred when they do not fit beside the admitted pods, nil when they
// fit.
func resizeFits(pod *corev1.Pod, admitted []*corev1.Pod, milliCPU, memory int64) *rejection {
	wantCPU, wantMem := podRequests(pod)
	if milliCPU > 0 && wantCPU > milliCPU {
		return &rejection{corev1.PodReasonInfeasible, fmt.Sprintf("Node didn't have enough capacity: cpu, requested: %d, capacity: %d", wantCPU, milliCPU)}
	}
	if memory > 0 && wantMem > memory {
		return &rejection{corev1.PodReasonInfeasible, fmt.Sprintf("Node didn't have enough capacity: memory, requested: %d, capacity: %d", wantMem, memory)}
	}
	if r := fits(pod, admitted, milliCPU, memory); r != nil {
		return &rejection{corev1.PodReasonDeferred, strings.TrimPrefix(r.Message, "Pod was rejected: ")}
	}
	return nil
}

// keepRejected shows a pod the node did not admit as Failed, stopping
// whatever it may still run from before (an edit that no longer fits).
func (a *Agent) keepRejected(ctx context.Context, rec podRecord, r *rejection) time.Duration {
	pod := rec.spec
	if err := a.rt.KillPod(ctx, pod, rec.runtime.Observed); err != nil {
		return a.cfg.ErrorRequeue
	}
	a.probes.RemovePod(rec.uid)
	st := statusOf(rec, pod, a.view(pod, rec.runtime.Observed))
	st.Phase, st.Reason, st.Message = corev1.PodFailed, r.Reason, r.Message
	st.Conditions = slices.DeleteFunc(st.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress // a failed pod resizes nothing
	})
	a.showStatus(rec, pod, rec.runtime.Observed, st, true)
	return 0
}

// fits checks pod against the node's capacity (zero: unknown, not
// checked) and the pods already admitted.
func fits(pod *corev1.Pod, admitted []*corev1.Pod, milliCPU, memory int64) *rejection {
	wantCPU, wantMem := podRequests(pod)
	var usedCPU, usedMem int64
	for _, p := range admitted {
		c, m := podRequests(p)
		usedCPU += c
		usedMem += m
	}
	if milliCPU > 0 && wantCPU > 0 && usedCPU+wantCPU > milliCPU {
		return &rejection{"OutOfcpu", fmt.Sprintf("Pod was rejected: Node didn't have enough resource: cpu, requested: %d, used: %d, capacity: %d", wantCPU, usedCPU, milliCPU)}
	}
	if memory > 0 && wantMem > 0 && usedMem+wantMem > memory {
		return &rejection{"OutOfmemory", fmt.Sprintf("Pod was rejected: Node didn't have enough resource: memory, requested: %d, used: %d, capacity: %d", wantMem, usedMem, memory)}
	}
	taken := map[string]string{}
	for _, p := range admitted {
		for _, k := range hostPorts(p) {
			taken[k] = p.Namespace + "/" + p.Name
		}
	}
	for _, k := range hostPorts(pod) {
		if owner, ok := taken[k]; ok {
			return &rejection{"NodePorts", fmt.Sprintf("Pod was rejected: host port %s is already used by pod %s", k, owner)}
		}
	}
	return nil
}

// podRequests is what the pod asks for as the scheduler counts it: the
// larger of its app containers' sum and its largest init container, plus
// the overhead; in millicores and bytes.
func podRequests(pod *corev1.Pod) (milliCPU, memory int64) {
	sum := func(cs []corev1.Container) (int64, int64) {
		var c, m int64
		for _, ct := range cs {
			c += quantity(ct.Resources.Requests, corev1.ResourceCPU, true)
			m += quantity(ct.Resources.Requests, corev1.ResourceMemory, false)
		}
		return c, m
	}
	milliCPU, memory = sum(pod.Spec.Containers)
	for _, ct := range pod.Spec.InitContainers {
		milliCPU = max(milliCPU, quantity(ct.Resources.Requests, corev1.ResourceCPU, true))
		memory = max(memory, quantity(ct.Resources.Requests, corev1.ResourceMemory, false))
	}
	milliCPU += quantity(pod.Spec.Overhead, corev1.ResourceCPU, true)
	memory += quantity(pod.Spec.Overhead, corev1.ResourceMemory, false)
	return milliCPU, memory
}

func quantity(l corev1.ResourceList, name corev1.ResourceName, milli bool) int64 {
	q, ok := l[name]
	if !ok {
		return 0
	}
	return value(q, milli)
}

func value(q resource.Quantity, milli bool) int64 {
	if milli {
		return q.MilliValue()
	}
	return q.Value()
}

// hostPorts are the pod's host ports as "protocol/ip:port"; an empty host
// IP claims every address, so it is written 0.0.0.0.
func hostPorts(pod *corev1.Pod) []string {
	var out []string
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort == 0 {
				continue
			}
			ip := p.HostIP
			if ip == "" {
				ip = "0.0.0.0"
			}
			out = append(out, fmt.Sprintf("%s/%s:%d", p.Protocol, ip, p.HostPort))
		}
	}
	return out
}
