package kuberuntime

import (
	"context"
	"errors"
	"fmt"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/agent/plan"
)

// keepPerName is how many instances of one container name survive garbage
// collection in the newest sandbox: the newest, which the plan decides
// from, and the one before, which the status shows as the last
// termination.
const keepPerName = 2

// CollectGarbage removes what the pod no longer needs — exited containers
// beyond the newest two of each name, exited containers of older sandboxes
// unless they are the newest instance of their name, and older sandboxes
// that are no longer ready and hold nothing — and returns the observation
// without them. The newest instance of a name is kept whatever its
// sandbox, as the kubelet's container GC does: it carries the restart
// count, the crash-loop backoff and, under OnFailure, the fact that the
// container already succeeded, across a sandbox's replacement.
func (m *Manager) CollectGarbage(ctx context.Context, pr *PodRuntime) (plan.Observed, error) {
	obs := pr.Observed
	if len(obs.Sandboxes) == 0 {
		return obs, nil
	}
	newest := obs.Sandboxes[0].ID
	seen := map[string]int{}
	var kept []plan.Container
	var errs []error
	for _, c := range obs.Containers {
		seen[c.Name]++
		collect := c.State == plan.ContainerExited &&
			(seen[c.Name] > keepPerName || (c.SandboxID != newest && seen[c.Name] > 1))
		if !collect {
			kept = append(kept, c)
			continue
		}
		if err := m.removeContainer(ctx, pr, c); err != nil {
			errs = append(errs, err)
			kept = append(kept, c)
		}
	}
	inUse := map[string]bool{newest: true}
	for _, c := range kept {
		inUse[c.SandboxID] = true
	}
	var sandboxes []plan.Sandbox
	for _, s := range obs.Sandboxes {
		if inUse[s.ID] || s.State == plan.SandboxReady {
			sandboxes = append(sandboxes, s)
			continue
		}
		if err := m.cfg.Runtime.RemovePodSandbox(ctx, s.ID); err != nil && !errdefs.IsNotFound(fromGRPC(err)) {
			errs = append(errs, fmt.Errorf("remove sandbox %s: %w", s.ID, fromGRPC(err)))
			sandboxes = append(sandboxes, s)
		}
	}
	return plan.Observed{Sandboxes: sandboxes, Containers: kept}, errors.Join(errs...)
}
