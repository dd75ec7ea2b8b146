package agent

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crib-dev/crib/internal/agent/kuberuntime"
	"github.com/crib-dev/crib/internal/agent/podstatus"
)

// terminate tears down a pod no manifest asks for: it shows the pod as
// terminating, stops and removes everything it has, and moves its record
// to terminated. last is its last known spec, nil if the agent never saw
// one (it restarted meanwhile) or the pod is terminated already.
func (a *Agent) terminate(ctx context.Context, uid string, last *corev1.Pod, pr *kuberuntime.PodRuntime) time.Duration {
	if last != nil {
		if _, ok := a.store.Get(types.UID(uid)); ok {
			terminating := podstatus.MarkTerminating(last, a.cfg.Clock.Now())
			a.setStatus(terminating, pr.Observed, a.computeStatus(terminating, pr.Observed, "", true))
		}
	}
	if err := a.rt.TerminatePod(ctx, last, pr); err != nil {
		a.log.Warn("terminate pod", "uid", uid, "err", err)
		return a.cfg.ErrorRequeue
	}
	a.probes.RemovePod(uid)
	a.tornDown(uid, last)
	return 0
}

// tornDown records that the pod's teardown is done. A pod whose manifest
// came back meanwhile keeps its record as it is, for the next sync to
// start it afresh; any other is terminated and leaves the status API.
func (a *Agent) tornDown(uid string, last *corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	rec := a.pods[uid]
	if rec == nil {
		return
	}
	// Its containers are gone, and with them why they waited.
	rec.waiting = nil
	if rec.wanted() {
		return
	}
	rec.terminated()
	if !rec.listed() {
		delete(a.pods, uid)
	}
	a.store.Delete(types.UID(uid))
	if last != nil {
		for _, c := range append(last.Spec.InitContainers, last.Spec.Containers...) {
			a.metrics.ContainerRestarts.Delete(last.Namespace, last.Name, c.Name)
		}
	}
}
