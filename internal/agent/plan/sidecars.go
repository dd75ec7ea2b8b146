package plan

import (
	"fmt"

	"github.com/crib-dev/crib/internal/agent/labels"
)

// sidecarStep keeps running the sidecars that have had their turn in the
// init sequence (index below before), in sandbox sandboxID, whatever the
// pod's restart policy: an exited or missing one starts again (the
// executor applies crash-loop backoff), a created, unknown or running one
// whose spec changed (beyond a resize its resizePolicy allows in place) or
// whose liveness or startup probe failed is killed
// and started again.
func (p *planner) sidecarStep(sandboxID string, before int) {
	inits := p.pod.Spec.InitContainers
	for i := 0; i < before && i < len(inits); i++ {
		c := &inits[i]
		if !isSidecar(c) {
			continue
		}
		st := newest(p.obs.Containers, labels.TypeInit, c.Name, sandboxID)
		start := func(msg string) {
			rc := nextAttempt(p.obs.Containers, labels.TypeInit, c.Name)
			p.a.SidecarsToStart = append(p.a.SidecarsToStart, Start{Index: i, RestartCount: rc, Message: msg})
			p.note("start sidecar %s: %s", c.Name, msg)
		}
		restart := func(reason, msg string) {
			p.kill(st, reason, fmt.Sprintf("sidecar %s: %s, will be restarted", c.Name, msg))
			start(msg)
		}
		switch {
		case st == nil:
			start("not running")
		case p.killed[st.ID]:
			start("moved to the current sandbox")
		case st.State == ContainerExited:
			start(fmt.Sprintf("exited with code %d", st.ExitCode))
		case st.State == ContainerCreated:
			restart(ReasonNeverStarted, "created but never started")
		case st.State == ContainerUnknown:
			restart(ReasonUnknownState, "in an unknown state")
		case st.Hash != ContainerHash(p.pod, c) && !p.resizeOnly(st, c):
			restart(ReasonSpecChanged, "definition changed")
		case p.in.LivenessFailed[st.ID]:
			restart(ReasonLivenessFailed, ReasonLivenessFailed)
		case p.in.StartupFailed[st.ID]:
			restart(ReasonStartupFailed, ReasonStartupFailed)
		case st.Hash != ContainerHash(p.pod, c):
			if msg := p.resize(st, c, labels.TypeInit, i); msg != "" {
				p.kill(st, ReasonResizeRestart, msg)
				start("resized with a restart")
			}
		}
	}
}
