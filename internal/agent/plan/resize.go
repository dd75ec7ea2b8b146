package plan

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// resizeOnly reports whether instance st of spec container c differs from
// it at most in its resources: both carry the same ResizeHash. An instance
// made before the agent stored that hash never qualifies.
func (p *planner) resizeOnly(st *Container, c *corev1.Container) bool {
	return st.ResizeHash != "" && st.ResizeHash == ResizeHash(p.pod, c)
}

// resize plans a running container whose spec changed only in its
// resources, as the kubelet does with InPlacePodVerticalScaling: what the
// runtime reports it runs with is compared with what the spec asks for
// now; nothing differs: nothing to do (a memory request alone, or a resize
// already done); every resource that differs allows it (resizePolicy
// NotRequired, the default): a resize in place; any that does not
// (RestartContainer): a restart, whose message it returns. typ and index
// say where c is in the spec.
func (p *planner) resize(st *Container, c *corev1.Container, typ string, index int) (restart string) {
	want, ok := p.in.Resources[c.Name]
	if !ok || st.Resources == nil {
		return fmt.Sprintf("container %s resources changed and the runtime does not report the ones it runs with, will be restarted", c.Name)
	}
	var changed, needRestart []string
	for _, r := range []struct {
		name    corev1.ResourceName
		differs bool
	}{
		{corev1.ResourceCPU, want.cpuDiffers(*st.Resources)},
		{corev1.ResourceMemory, want.memoryDiffers(*st.Resources)},
	} {
		if !r.differs {
			continue
		}
		changed = append(changed, string(r.name))
		if resizePolicy(c, r.name) == corev1.RestartContainer {
			needRestart = append(needRestart, string(r.name))
		}
	}
	switch {
	case len(changed) == 0:
		return ""
	case len(needRestart) > 0:
		return fmt.Sprintf("container %s: resizing its %s needs a restart (resizePolicy RestartContainer), will be restarted",
			c.Name, strings.Join(needRestart, " and "))
	}
	p.a.ContainersToResize = append(p.a.ContainersToResize, Resize{
		ID: st.ID, Name: c.Name, Type: typ, Index: index, To: want,
		Message: fmt.Sprintf("resize %s in place", strings.Join(changed, " and ")),
	})
	p.note("resize %s %s: %s", c.Name, st.ID, strings.Join(changed, " and "))
	return ""
}

// resizePolicy is c's restart policy for resizing resource r; unset is
// NotRequired, the API default.
func resizePolicy(c *corev1.Container, r corev1.ResourceName) corev1.ResourceResizeRestartPolicy {
	for _, rp := range c.ResizePolicy {
		if rp.ResourceName == r && rp.RestartPolicy != "" {
			return rp.RestartPolicy
		}
	}
	return corev1.NotRequired
}
