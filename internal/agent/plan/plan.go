package plan

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
)

// ComputeActions decides the next step for one pod from its spec and what
// the runtime holds for it. It is the kubelet's computePodActions for
// crib's types: see the package documentation for the rules and for where
// they differ from the kubelet's.
func ComputeActions(in Input) Actions {
	if in.Pod == nil {
		return Actions{NextInit: -1, Reason: "no pod"}
	}
	p := &planner{
		in:     in,
		pod:    in.Pod,
		obs:    in.Observed,
		a:      Actions{NextInit: -1},
		killed: map[string]bool{},
		hashes: map[string]string{},
	}
	p.compute()
	p.a.Reason = strings.Join(p.notes, "; ")
	return p.a
}

// planner holds one ComputeActions call's working state.
type planner struct {
	in     Input
	pod    *corev1.Pod
	obs    Observed
	a      Actions
	killed map[string]bool   // container IDs already in ContainersToKill
	hashes map[string]string // specHash cache
	notes  []string
}

func (p *planner) note(format string, args ...any) {
	p.notes = append(p.notes, fmt.Sprintf(format, args...))
}

// policy is the pod's restart policy; an empty one is Always, the API
// default.
func (p *planner) policy() corev1.RestartPolicy {
	if p.pod.Spec.RestartPolicy == "" {
		return corev1.RestartPolicyAlways
	}
	return p.pod.Spec.RestartPolicy
}

func (p *planner) compute() {
	cur, why := sandboxChange(p.pod, p.obs.Sandboxes, p.in)
	if why != "" {
		p.recreate(cur, why)
		return
	}
	if c := p.staleInit(cur.ID, false); c != nil {
		// Init containers prepare the pod for its app containers: a changed
		// one means initialising again, in a new sandbox. (A changed
		// sidecar is only restarted: staleInit leaves sidecars out.)
		p.recreate(cur, "init container "+c.Name+" spec changed")
		return
	}
	p.a.SandboxID = cur.ID
	p.killStrays(cur.ID)

	prog := p.progress(cur.ID)
	p.sidecarStep(cur.ID, prog.sidecarsBefore)
	if !prog.done {
		p.initStep(prog)
		return
	}
	keep := p.appContainers()
	if keep == 0 && len(p.a.ContainersToStart) == 0 {
		p.killPod("no container runs or will be restarted")
	}
}

// kill adds c to ContainersToKill once.
func (p *planner) kill(c *Container, reason, msg string) {
	if p.killed[c.ID] {
		return
	}
	p.killed[c.ID] = true
	p.a.ContainersToKill = append(p.a.ContainersToKill, Kill{ID: c.ID, Name: c.Name, Reason: reason, Message: msg})
	p.note("kill %s %s: %s", c.Name, c.ID, reason)
}

// killPod turns the plan into "stop everything": the kills it had already
// decided are folded into KillPod and stay named only in Reason.
func (p *planner) killPod(why string) {
	p.a.KillPod = true
	p.a.ContainersToKill = nil
	p.a.ContainersToStart = nil
	p.a.SidecarsToStart = nil
	p.a.NextInit = -1
	p.note("kill pod: %s", why)
}

// anyLive reports whether any container of the pod may still run.
func (p *planner) anyLive() bool {
	for i := range p.obs.Containers {
		if isLive(&p.obs.Containers[i]) {
			return true
		}
	}
	return false
}

// anyReady reports whether any sandbox of the pod is ready.
func (p *planner) anyReady() bool {
	for _, s := range p.obs.Sandboxes {
		if s.State == SandboxReady {
			return true
		}
	}
	return false
}

// killStrays stops live containers that must not run whatever the spec
// says: those in a sandbox other than the current one, those whose name the
// spec no longer declares, and live instances older than the newest
// instance of their name (two live instances after an agent crash).
func (p *planner) killStrays(sandboxID string) {
	names := specNames(p.pod)
	cs := p.obs.Containers
	for i := range cs {
		c := &cs[i]
		if !isLive(c) {
			continue
		}
		switch {
		case !names[c.Type][c.Name]:
			p.kill(c, ReasonNotInSpec, fmt.Sprintf("container %s is not in the pod spec anymore", c.Name))
		case c != newest(cs, c.Type, c.Name, ""):
			p.kill(c, ReasonDuplicate, fmt.Sprintf("container %s has a newer instance", c.Name))
		case c.SandboxID != sandboxID:
			p.kill(c, ReasonOldSandbox, fmt.Sprintf("container %s runs in old sandbox %s", c.Name, c.SandboxID))
		}
	}
}

// initStep plans the init containers while they are not all done.
func (p *planner) initStep(prog initProgress) {
	if prog.next < 0 {
		p.note("waiting for a running init container")
		return
	}
	name := p.pod.Spec.InitContainers[prog.next].Name
	if prog.failed && p.policy() == corev1.RestartPolicyNever {
		p.a.InitFailed = true
		p.killPod(fmt.Sprintf("init container %s failed and the restart policy is Never", name))
		return
	}
	if c := prog.last; c != nil {
		switch c.State {
		case ContainerRunning:
			p.kill(c, prog.replace, fmt.Sprintf("sidecar %s: %s, will be restarted", name, prog.replace))
		case ContainerUnknown:
			p.kill(c, ReasonUnknownState, fmt.Sprintf("init container %s is in an unknown state, stopping it before a restart", name))
		case ContainerCreated:
			p.kill(c, ReasonNeverStarted, fmt.Sprintf("init container %s was created but never started", name))
		}
	}
	p.a.NextInit = prog.next
	p.a.NextInitRestartCount = nextAttempt(p.obs.Containers, labels.TypeInit, name)
	switch {
	case prog.failed:
		p.note("restart failed init container %s", name)
	case prog.last != nil && isSidecar(&p.pod.Spec.InitContainers[prog.next]):
		p.note("restart sidecar %s", name)
	default:
		p.note("start init container %s", name)
	}
}
