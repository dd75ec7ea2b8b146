package agent

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/crib-dev/crib/internal/agent/podstatus"
)

// terminate tears down a pod no manifest asks for: it shows the pod as
// terminating, stops and removes everything it has, and has the table
// record the teardown. rec is its record with what the sync observed;
// its spec is the pod's last, nil if the agent never saw one (it
// restarted meanwhile) or the pod is terminated already.
func (a *Agent) terminate(ctx context.Context, rec podRecord) time.Duration {
	uid, last := rec.uid, rec.spec
	if last != nil && rec.status != nil {
		terminating := podstatus.MarkTerminating(last, a.cfg.Clock.Now())
		v := a.view(terminating, rec.runtime.Observed)
		v.Terminating = true
		a.showStatus(rec, terminating, rec.runtime.Observed, statusOf(rec, terminating, v), false)
	}
	if err := a.rt.TerminatePod(ctx, last, rec.runtime); err != nil {
		a.log.Warn("terminate pod", "uid", uid, "err", err)
		return a.cfg.ErrorRequeue
	}
	a.probes.RemovePod(uid)
	if !a.table.tornDown(uid) {
		// Its manifest came back meanwhile: the next sync starts it afresh.
		return 0
	}
	a.store.Delete(types.UID(uid))
	if last != nil {
		for _, c := range append(last.Spec.InitContainers, last.Spec.Containers...) {
			a.metrics.ContainerRestarts.Delete(last.Namespace, last.Name, c.Name)
		}
	}
	return 0
}
