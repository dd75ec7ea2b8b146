package plan

import "github.com/crib-dev/crib/internal/agent/labels"

// initProgress is how far the init containers have come.
type initProgress struct {
	// done: every init container succeeded (or an app container runs,
	// which proves they did at some point).
	done bool
	// next is the index of the init container to start now, or -1 while
	// one is running.
	next int
	// last is the newest instance of InitContainers[next], when there is
	// one (it failed, or was created and never started).
	last *Container
	// failed: InitContainers[next] failed.
	failed bool
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
// Like the kubelet it walks from the last init container back: a failed one
// is retried first, a running one means wait, and the latest success says
// which one comes next.
func (p *planner) progress(sandboxID string) initProgress {
	inits := p.pod.Spec.InitContainers
	if len(inits) == 0 {
		return initProgress{done: true, next: -1}
	}
	for _, c := range p.pod.Spec.Containers {
		st := newest(p.obs.Containers, labels.TypeApp, c.Name, sandboxID)
		if st != nil && st.State == ContainerRunning {
			return initProgress{done: true, next: -1}
		}
	}
	for i := len(inits) - 1; i >= 0; i-- {
		st := newest(p.obs.Containers, labels.TypeInit, inits[i].Name, sandboxID)
		if st != nil && initFailed(st) {
			return initProgress{next: i, last: st, failed: true}
		}
	}
	for i := len(inits) - 1; i >= 0; i-- {
		st := newest(p.obs.Containers, labels.TypeInit, inits[i].Name, sandboxID)
		switch {
		case st == nil:
			continue
		case st.State == ContainerRunning:
			return initProgress{next: -1}
		case st.State == ContainerCreated:
			return initProgress{next: i, last: st}
		case i == len(inits)-1:
			return initProgress{done: true, next: -1}
		default:
			return initProgress{next: i + 1}
		}
	}
	return initProgress{next: 0}
}
