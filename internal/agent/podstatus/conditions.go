package podstatus

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conditions returns the kubelet-owned conditions in the kubelet's order:
// PodReadyToStartContainers, Initialized, Ready, ContainersReady,
// PodScheduled, and the resize conditions while they hold.
func conditions(f Facts, st *corev1.PodStatus) []corev1.PodCondition {
	out := []corev1.PodCondition{
		readyToStartCondition(f),
		initializedCondition(f.Pod, st),
	}
	containersReady := containersReadyCondition(f.Pod, st)
	out = append(out,
		podReadyCondition(f.Pod, containersReady),
		containersReady,
		corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
	)
	out = append(out, resizeConditions(f, st)...)
	for i := range out {
		out[i].LastTransitionTime = transitionTime(f, out[i])
	}
	return out
}

// transitionTime keeps the previous time while a condition's status stays
// the same.
func transitionTime(f Facts, c corev1.PodCondition) metav1.Time {
	if f.Previous != nil {
		for _, p := range f.Previous.Conditions {
			if p.Type == c.Type && p.Status == c.Status && !p.LastTransitionTime.IsZero() {
				return p.LastTransitionTime
			}
		}
	}
	return apiTime(f.Now)
}

func readyToStartCondition(f Facts) corev1.PodCondition {
	c := corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse}
	if f.SandboxError != "" {
		c.Message = f.SandboxError
		return c
	}
	if sandboxReady(f.Observed) {
		c.Status = corev1.ConditionTrue
	}
	return c
}

func initializedCondition(pod *corev1.Pod, st *corev1.PodStatus) corev1.PodCondition {
	c := corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}
	if st.Phase == corev1.PodSucceeded {
		if len(pod.Spec.InitContainers) > 0 {
			c.Reason = ReasonPodCompleted
		}
		return c
	}
	if hasAppStarted(st.ContainerStatuses) {
		return c
	}
	var incomplete []string
	for i := range pod.Spec.InitContainers {
		spec := &pod.Spec.InitContainers[i]
		cs, ok := find(st.InitContainerStatuses, spec.Name)
		done := ok && cs.Ready
		if IsSidecar(spec) {
			done = ok && cs.Started != nil && *cs.Started
		}
		if !done {
			incomplete = append(incomplete, spec.Name)
		}
	}
	if len(incomplete) > 0 {
		c.Status = corev1.ConditionFalse
		c.Reason = ReasonContainersNotInitialized
		c.Message = fmt.Sprintf("containers with incomplete status: %s", incomplete)
	}
	return c
}

func containersReadyCondition(pod *corev1.Pod, st *corev1.PodStatus) corev1.PodCondition {
	c := corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse}
	switch st.Phase {
	case corev1.PodSucceeded:
		c.Reason = ReasonPodCompleted
		return c
	case corev1.PodFailed:
		c.Reason = ReasonPodFailed
		return c
	}
	var unready []string
	for i := range pod.Spec.InitContainers {
		spec := &pod.Spec.InitContainers[i]
		if !IsSidecar(spec) {
			continue
		}
		if cs, ok := find(st.InitContainerStatuses, spec.Name); !ok || !cs.Ready {
			unready = append(unready, spec.Name)
		}
	}
	for _, spec := range pod.Spec.Containers {
		if cs, ok := find(st.ContainerStatuses, spec.Name); !ok || !cs.Ready {
			unready = append(unready, spec.Name)
		}
	}
	if len(unready) > 0 {
		c.Reason = ReasonContainersNotReady
		c.Message = fmt.Sprintf("containers with unready status: %s", unready)
		return c
	}
	c.Status = corev1.ConditionTrue
	return c
}

// podReadyCondition follows ContainersReady, then the readiness gates: a
// standalone pod has nobody to set their conditions, so a gate holds the
// pod unready.
func podReadyCondition(pod *corev1.Pod, containersReady corev1.PodCondition) corev1.PodCondition {
	c := corev1.PodCondition{Type: corev1.PodReady, Status: containersReady.Status,
		Reason: containersReady.Reason, Message: containersReady.Message}
	if c.Status != corev1.ConditionTrue || len(pod.Spec.ReadinessGates) == 0 {
		return c
	}
	msgs := make([]string, 0, len(pod.Spec.ReadinessGates))
	for _, g := range pod.Spec.ReadinessGates {
		msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(g.ConditionType)))
	}
	c.Status = corev1.ConditionFalse
	c.Reason = ReasonReadinessGatesNotReady
	c.Message = strings.Join(msgs, ", ")
	return c
}
