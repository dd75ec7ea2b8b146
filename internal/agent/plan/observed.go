package plan

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
)

// isLive reports whether a container may hold a process: anything but
// exited. Created and unknown containers count as live, so that the plan
// stops them before another instance of the same name starts.
func isLive(c *Container) bool { return c.State != ContainerExited }

// newerContainer reports whether a was created after b: by CreatedAt, then
// by Attempt when the times are equal (tests, runtimes with coarse clocks).
func newerContainer(a, b *Container) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.After(b.CreatedAt)
	}
	return a.Attempt > b.Attempt
}

// newestSandbox returns the newest sandbox, or nil when there is none.
func newestSandbox(sbs []Sandbox) *Sandbox {
	var best *Sandbox
	for i := range sbs {
		s := &sbs[i]
		switch {
		case best == nil:
			best = s
		case !s.CreatedAt.Equal(best.CreatedAt):
			if s.CreatedAt.After(best.CreatedAt) {
				best = s
			}
		case s.Attempt > best.Attempt:
			best = s
		}
	}
	return best
}

// newest returns the newest container of type typ named name, limited to
// sandbox sandboxID unless that is empty, or nil when there is none.
func newest(cs []Container, typ, name, sandboxID string) *Container {
	var best *Container
	for i := range cs {
		c := &cs[i]
		if c.Type != typ || c.Name != name || (sandboxID != "" && c.SandboxID != sandboxID) {
			continue
		}
		if best == nil || newerContainer(c, best) {
			best = c
		}
	}
	return best
}

// nextAttempt is the attempt for a new instance of a name: one more than
// the highest attempt the runtime still holds for it, in any sandbox, so
// that the new instance's CRI name never collides with an old one.
func nextAttempt(cs []Container, typ, name string) uint32 {
	var next uint32
	for i := range cs {
		c := &cs[i]
		if c.Type == typ && c.Name == name && c.Attempt+1 > next {
			next = c.Attempt + 1
		}
	}
	return next
}

// specNames returns, per container type, the names the pod spec declares.
func specNames(pod *corev1.Pod) map[string]map[string]bool {
	names := map[string]map[string]bool{
		labels.TypeInit:      {},
		labels.TypeApp:       {},
		labels.TypeEphemeral: {},
	}
	for _, c := range pod.Spec.InitContainers {
		names[labels.TypeInit][c.Name] = true
	}
	for _, c := range pod.Spec.Containers {
		names[labels.TypeApp][c.Name] = true
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names[labels.TypeEphemeral][c.Name] = true
	}
	return names
}
