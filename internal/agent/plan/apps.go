package plan

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
)

// appContainers plans the app containers once the init containers are
// done, and returns how many running ones it keeps.
func (p *planner) appContainers() int {
	keep := 0
	policy := p.policy()
	for i := range p.pod.Spec.Containers {
		c := &p.pod.Spec.Containers[i]
		st := newest(p.obs.Containers, labels.TypeApp, c.Name, "")
		rc := nextAttempt(p.obs.Containers, labels.TypeApp, c.Name)
		start := func(msg string) {
			p.a.ContainersToStart = append(p.a.ContainersToStart, Start{Index: i, RestartCount: rc, Message: msg})
			p.note("start %s: %s", c.Name, msg)
		}
		switch {
		case st == nil:
			start("not started yet")
		case p.killed[st.ID]:
			// killStrays stopped the newest instance (it ran in an old
			// sandbox): it runs again here.
			start("moved to the current sandbox")
		case st.State == ContainerCreated:
			p.kill(st, ReasonNeverStarted, fmt.Sprintf("container %s was created but never started, will be replaced", c.Name))
			start("replaces an instance that never started")
		case st.State == ContainerUnknown:
			p.kill(st, ReasonUnknownState, fmt.Sprintf("container %s is in an unknown state, stopping it before a restart", c.Name))
			start("replaces an instance in an unknown state")
		case st.State == ContainerExited && p.stale(st):
			start("spec changed since it exited")
		case st.State == ContainerExited:
			if restartExited(policy, st) {
				start(fmt.Sprintf("exited with code %d, restart policy %s", st.ExitCode, policy))
			}
		case st.Hash != ContainerHash(p.pod, c) && !p.resizeOnly(st, c):
			p.kill(st, ReasonSpecChanged, fmt.Sprintf("container %s definition changed, will be restarted", c.Name))
			start("spec changed")
		case p.in.LivenessFailed[st.ID]:
			p.killRunning(st, ReasonLivenessFailed, policy, start)
		case p.in.StartupFailed[st.ID]:
			p.killRunning(st, ReasonStartupFailed, policy, start)
		case st.Hash != ContainerHash(p.pod, c):
			if msg := p.resize(st, c, labels.TypeApp, i); msg != "" {
				p.kill(st, ReasonResizeRestart, msg)
				start("resized with a restart")
				continue
			}
			keep++
		default:
			keep++
		}
	}
	return keep
}

// killRunning stops a running container whose probe failed and restarts it
// unless the restart policy is Never.
func (p *planner) killRunning(st *Container, reason string, policy corev1.RestartPolicy, start func(string)) {
	msg := fmt.Sprintf("container %s: %s", st.Name, reason)
	if policy != corev1.RestartPolicyNever {
		msg += ", will be restarted"
		start(reason)
	}
	p.kill(st, reason, msg)
}

// restartExited applies the restart policy to an exited container.
func restartExited(policy corev1.RestartPolicy, st *Container) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return st.ExitCode != 0
	default:
		return true
	}
}
