package plan

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
)

// recreate plans a new sandbox (cur is the newest old one, or nil): stop
// everything, create the sandbox, then start from the first init container,
// or every app container when there are none. A finished pod gets no new
// sandbox.
func (p *planner) recreate(cur *Sandbox, why string) {
	if cur != nil {
		p.a.Attempt = cur.Attempt + 1
	}
	if done, reason := p.finished(); done {
		p.a.InitFailed = p.policy() == corev1.RestartPolicyNever && p.progress("").failed
		if p.anyReady() || p.anyLive() {
			p.killPod(why + ", and " + reason)
		} else {
			p.note("%s, and %s: nothing to do", why, reason)
		}
		p.a.Attempt = 0
		return
	}
	p.a.KillPod = len(p.obs.Sandboxes) > 0 || p.anyLive()
	p.a.CreateSandbox = true
	p.note("create sandbox: %s", why)
	if inits := p.pod.Spec.InitContainers; len(inits) > 0 {
		p.a.NextInit = 0
		p.a.NextInitRestartCount = nextAttempt(p.obs.Containers, labels.TypeInit, inits[0].Name)
		p.note("start init container %s", inits[0].Name)
		return
	}
	p.a.ContainersToStart = p.wantedApps()
}

// wantedApps lists the app containers a new sandbox starts: all of them,
// except those whose run the restart policy does not repeat (ranOnce).
func (p *planner) wantedApps() []Start {
	var out []Start
	for i, c := range p.pod.Spec.Containers {
		st := newest(p.obs.Containers, labels.TypeApp, c.Name, "")
		if p.ranOnce(st) {
			continue
		}
		msg := "start in new sandbox"
		if st != nil {
			msg = "restart in new sandbox"
		}
		out = append(out, Start{Index: i, RestartCount: nextAttempt(p.obs.Containers, labels.TypeApp, c.Name), Message: msg})
	}
	return out
}

// succeeded reports whether a container instance exited with code 0.
func succeeded(c *Container) bool {
	return c != nil && c.State == ContainerExited && c.ExitCode == 0
}

// finished reports whether a pod whose sandbox is gone must stay down, as
// the kubelet decides it: with restart policy Never once the pod had a
// sandbox and any container; with OnFailure once the init containers are
// done and every app container succeeded. A pod edited since it ran (any
// stale newest instance) is never finished.
func (p *planner) finished() (bool, string) {
	if p.anyStale() {
		return false, ""
	}
	if p.policy() == corev1.RestartPolicyNever && len(p.obs.Sandboxes) > 0 && p.ranContainers() {
		return true, "restart policy Never and the pod already ran"
	}
	// As the kubelet with sidecars: any app container instance proves
	// that the init containers were done once (sidecars, stopped with the
	// pod, no longer look started).
	if len(p.wantedApps()) == 0 && (p.anyApp() || p.progress("").done) {
		return true, "every container has finished and none will be restarted"
	}
	return false, ""
}

// anyApp reports whether the runtime holds any app container of the pod.
func (p *planner) anyApp() bool {
	for _, c := range p.obs.Containers {
		if c.Type == labels.TypeApp {
			return true
		}
	}
	return false
}

// ranContainers reports whether the runtime holds any init or app
// container of the pod.
func (p *planner) ranContainers() bool {
	for _, c := range p.obs.Containers {
		if c.Type == labels.TypeInit || c.Type == labels.TypeApp {
			return true
		}
	}
	return false
}
