package plan

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
)

// initProgress is how far the init containers have come.
type initProgress struct {
	// done: every regular init container succeeded and every sidecar
	// started (or an app container runs, which proves they did at some
	// point).
	done bool
	// next is the index of the init container to start now, or -1 while
	// one is running (a regular one, or a sidecar whose startup probe has
	// not passed yet).
	next int
	// last is the newest instance of InitContainers[next], when there is
	// one (it failed, exited, was created and never started, or is a
	// running sidecar that must be replaced).
	last *Container
	// replace is the kill reason when last is a running sidecar that must
	// be replaced before it counts as started.
	replace string
	// failed: InitContainers[next] is a regular init container that failed.
	failed bool
	// sidecarsBefore: the sidecars with a lower index have had their turn
	// and are kept running by sidecarStep.
	sidecarsBefore int
}

// isSidecar reports whether an init container is restartable (a native
// sidecar): restartPolicy Always on the container.
func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// initFailed reports whether an init container instance counts as failed:
// exited non-zero, OOM-killed, or in an unknown state.
func initFailed(c *Container) bool {
	return c.Reason == "OOMKilled" ||
		(c.State == ContainerExited && c.ExitCode != 0) ||
		c.State == ContainerUnknown
}

// progress reports init-container progress from the containers of sandbox
// sandboxID, or of every sandbox when it is empty. The kubelet purges init
// containers when it recreates a sandbox; limiting the view to the current
// sandbox gives the same answer without depending on that purge.
//
// Like the kubelet it walks from the last init container back: a failed
// regular one is retried first, a running one means wait, and the latest
// success says which one comes next. A sidecar counts as a success once
// it runs and has started (sidecarProgress).
func (p *planner) progress(sandboxID string) initProgress {
	inits := p.pod.Spec.InitContainers
	if len(inits) == 0 {
		return initProgress{done: true, next: -1}
	}
	for _, c := range p.pod.Spec.Containers {
		st := newest(p.obs.Containers, labels.TypeApp, c.Name, sandboxID)
		if st != nil && st.State == ContainerRunning {
			return initProgress{done: true, next: -1, sidecarsBefore: len(inits)}
		}
	}
	for i := len(inits) - 1; i >= 0; i-- {
		if isSidecar(&inits[i]) {
			continue
		}
		st := newest(p.obs.Containers, labels.TypeInit, inits[i].Name, sandboxID)
		if st != nil && initFailed(st) {
			return initProgress{next: i, last: st, failed: true, sidecarsBefore: i}
		}
	}
	for i := len(inits) - 1; i >= 0; i-- {
		st := newest(p.obs.Containers, labels.TypeInit, inits[i].Name, sandboxID)
		switch {
		case st == nil:
			continue
		case isSidecar(&inits[i]):
			return p.sidecarProgress(i, st)
		case st.State == ContainerRunning:
			return initProgress{next: -1, sidecarsBefore: i}
		case st.State == ContainerCreated:
			return initProgress{next: i, last: st, sidecarsBefore: i}
		case i == len(inits)-1:
			return initProgress{done: true, next: -1, sidecarsBefore: len(inits)}
		default:
			return initProgress{next: i + 1, sidecarsBefore: i + 1}
		}
	}
	return initProgress{next: 0}
}

// sidecarProgress is progress when the newest instance of the latest init
// container that has one is sidecar i: started, it lets the next init
// container (or the app containers) go; running but not started yet
// (startup probe pending), it is waited for, or replaced when its startup
// probe failed or its spec changed; in any other state it is its own next
// step again.
func (p *planner) sidecarProgress(i int, st *Container) initProgress {
	inits := p.pod.Spec.InitContainers
	if st.State != ContainerRunning {
		return initProgress{next: i, last: st, sidecarsBefore: i}
	}
	if p.sidecarStarted(&inits[i], st) {
		if i == len(inits)-1 {
			return initProgress{done: true, next: -1, sidecarsBefore: len(inits)}
		}
		return initProgress{next: i + 1, sidecarsBefore: i + 1}
	}
	switch {
	case p.in.StartupFailed[st.ID]:
		return initProgress{next: i, last: st, replace: ReasonStartupFailed, sidecarsBefore: i}
	case st.Hash != ContainerHash(p.pod, &inits[i]):
		return initProgress{next: i, last: st, replace: ReasonSpecChanged, sidecarsBefore: i}
	}
	return initProgress{next: -1, sidecarsBefore: i}
}

// sidecarStarted reports whether a running sidecar instance has started:
// it has no startup probe, or the probe succeeded (Input.Started).
func (p *planner) sidecarStarted(spec *corev1.Container, st *Container) bool {
	return st.State == ContainerRunning && (spec.StartupProbe == nil || p.in.Started[st.ID])
}
