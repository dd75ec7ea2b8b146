package agenttest

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// testResizeInPlace: a pod edited to a bigger memory limit, with resize
// policy NotRequired, keeps its container (same id, restart count 0), and
// the container's own cgroup shows the new limit.
func testResizeInPlace(t *testing.T, s *suite) {
	const name = "resize-in-place"
	// The container prints its memory limit as its cgroup (v2 or v1) has
	// it, every half second.
	script := "trap 'exit 0' TERM; while true; do " +
		"cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes; sleep 0.5; done"
	c := s.env.shell("app", script)
	c.ResizePolicy = []corev1.ContainerResizePolicy{
		{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
		{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired},
	}
	size := func(mem string) corev1.ResourceRequirements {
		l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse(mem)}
		return corev1.ResourceRequirements{Requests: l, Limits: l}
	}
	c.Resources = size("64Mi")
	pod := podSpec(name, c)
	s.h.writePod(t, pod)
	p := s.h.waitFor(t, name, "running", longWait, func(p *corev1.Pod) bool { return running(p, "app") })
	before := containerStatus(p, "app").ContainerID
	logs := containerLogs(s.h.LogRoot, p, "app")
	if len(logs) != 1 {
		t.Fatalf("logs of app: %v", logs)
	}
	waitLog(t, logs[0], "prints its 64Mi limit", func(l []string) bool { return contains(l, strconv.Itoa(64<<20)) })

	pod.Spec.Containers[0].Resources = size("128Mi")
	s.h.writePod(t, pod)
	p = s.h.waitFor(t, name, "resized to 128Mi", longWait, func(p *corev1.Pod) bool {
		st := containerStatus(p, "app")
		return st != nil && st.State.Running != nil && st.Resources != nil &&
			st.Resources.Limits.Memory().Value() == 128<<20 && !hasCondition(p, corev1.PodResizeInProgress)
	})
	st := containerStatus(p, "app")
	if st.ContainerID != before || st.RestartCount != 0 {
		t.Errorf("after the resize: container %s restart count %d, want %s with 0", st.ContainerID, st.RestartCount, before)
	}
	if got := st.AllocatedResources.Memory().Value(); got != 128<<20 {
		t.Errorf("allocatedResources memory = %d, want 128Mi", got)
	}
	waitLog(t, logs[0], "prints its new 128Mi limit", func(l []string) bool { return contains(l, strconv.Itoa(128<<20)) })
	if now := containerLogs(s.h.LogRoot, p, "app"); len(now) != 1 {
		t.Errorf("logs of app after the resize: %v, want the first instance's only", now)
	}
}

func hasCondition(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}
