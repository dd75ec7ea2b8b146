package kuberuntime

import (
	"maps"

	"github.com/crib-dev/crib/internal/agent/podstatus"
)

// WaitingChanges is what one sync learned of why the pod's containers
// wait, by container name: the reason for each container it could not
// start, and nil for each it started, which waits no more. The reasons
// outlive the sync (a container stays in CrashLoopBackOff until it runs
// again), so the caller keeps them with Apply.
type WaitingChanges map[string]*podstatus.Waiting

// wait records why the container could not start.
func (c WaitingChanges) wait(name, reason, message string) {
	c[name] = &podstatus.Waiting{Reason: reason, Message: message}
}

// started records that the container started: whatever it waited for is
// over. A later wait in the same sync (a failed postStart hook) wins.
func (c WaitingChanges) started(name string) { c[name] = nil }

// Apply returns the reasons containers wait once these changes are made to
// waiting. The result is a new map: waiting itself is left as it was.
func (c WaitingChanges) Apply(waiting map[string]podstatus.Waiting) map[string]podstatus.Waiting {
	out := make(map[string]podstatus.Waiting, len(waiting)+len(c))
	maps.Copy(out, waiting)
	for name, w := range c {
		if w == nil {
			delete(out, name)
			continue
		}
		out[name] = *w
	}
	return out
}
