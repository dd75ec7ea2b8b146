package agent

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/kuberuntime"
	"github.com/crib-dev/crib/internal/agent/plan"
	"github.com/crib-dev/crib/internal/agent/prober"
)

// syncPod is one pod worker's turn: it observes what the runtime holds of
// the pod and then, by the pod's phase, runs the pod as its manifest says
// or tears it down. It works on the copies of the pod's record that the
// table hands it, one per transition:
//
//	beginSync → observed → admit → synced → statusShown   (a pod to run)
//	beginSync → observed → [statusShown] → tornDown       (a pod to tear down)
func (a *Agent) syncPod(ctx context.Context, uid string) time.Duration {
	began := a.cfg.Clock.Now()
	defer func() { a.metrics.ObserveSync(a.cfg.Clock.Since(began)) }()

	rec, data, sourced := a.table.beginSync(uid)
	if !sourced {
		// An event or a probe named the pod before the manifests were
		// read: whether it is wanted is not known yet.
		return a.cfg.ErrorRequeue
	}
	rec, err := a.observe(ctx, rec)
	if err != nil {
		a.log.Warn("observe pod", "uid", uid, "err", err)
		return a.cfg.ErrorRequeue
	}
	if rec.phase == phaseSyncing {
		return a.runPod(ctx, rec, data)
	}
	// Terminating, or terminated and named again by a relist or an event:
	// a teardown removes whatever is left, and is idempotent.
	return a.terminate(ctx, rec)
}

// observe reads what the runtime holds of the pod, building on the
// record's last observation, and hands back the record with it.
func (a *Agent) observe(ctx context.Context, rec podRecord) (podRecord, error) {
	pr, err := a.rt.ObservePod(ctx, rec.uid, rec.runtime)
	if err != nil {
		return rec, err
	}
	return a.table.observed(rec.uid, pr), nil
}

// runPod runs a pod a manifest asks for, from rec, its record with what
// the runtime holds of it: the node decides whether the pod may run at
// all (eviction, admission), the runtime manager plans and acts, and the
// status comes from what the runtime holds after.
func (a *Agent) runPod(ctx context.Context, rec podRecord, data kuberuntime.Data) time.Duration {
	pod := rec.spec
	if rec.evicted != "" {
		return a.keepEvicted(ctx, rec)
	}
	adm := a.admit(rec)
	switch {
	case adm.stale:
		return 0 // the manifest changed, and asked for a sync of its own
	case adm.rejected != nil:
		return a.keepRejected(ctx, rec, adm.rejected)
	}
	run := adm.run

	obs, err := a.rt.CollectGarbage(ctx, rec.runtime)
	if err != nil {
		a.log.Warn("collect garbage", "pod", podKey(pod), "err", err)
	}
	// run is the pod as allocated: while a resize of it is pending, its
	// containers keep the resources they have.
	res := a.rt.SyncPod(ctx, run, obs, data)
	if res.Err != nil {
		a.logSyncError(pod, res.Err)
	}

	after, err := a.rt.ObservePod(ctx, rec.uid, rec.runtime.Forget(res.Resized))
	if err == nil {
		obs = after.Observed
	}
	rec = a.table.synced(rec.uid, res, after)
	a.syncProbes(run, obs)
	v := a.view(pod, obs)
	v.SandboxError = res.SandboxError
	a.showStatus(rec, pod, obs, statusOf(rec, pod, v), true)
	return a.requeueAfter(res.Err)
}

// requeueAfter is how soon a pod whose sync ended with err is synced
// again on its own: never after a sync that went well, when the backoff
// ends for a pod that only waits one out, and soon otherwise.
func (a *Agent) requeueAfter(err error) time.Duration {
	if err == nil {
		return 0
	}
	if d := kuberuntime.RetryAfter(err); d > a.cfg.ErrorRequeue {
		return d
	}
	return a.cfg.ErrorRequeue
}

// logSyncError logs a failed sync; a pod that only waits (a backoff, an
// image policy) is no news.
func (a *Agent) logSyncError(pod *corev1.Pod, err error) {
	if kuberuntime.IsWaiting(err) {
		a.log.Debug("pod is waiting", "pod", podKey(pod), "err", err)
		return
	}
	a.log.Warn("sync pod", "pod", podKey(pod), "err", err)
}

// syncProbes points the prober at the pod's running containers.
func (a *Agent) syncProbes(pod *corev1.Pod, obs plan.Observed) {
	podIP := ""
	if len(obs.Sandboxes) > 0 && obs.Sandboxes[0].State == plan.SandboxReady {
		podIP = obs.Sandboxes[0].IP
	}
	running := map[string]prober.Running{}
	for _, c := range obs.Containers {
		if c.State != plan.ContainerRunning {
			continue
		}
		if _, dup := running[c.Name]; dup {
			continue // the newest comes first
		}
		running[c.Name] = prober.Running{ID: c.ID, StartedAt: c.StartedAt}
	}
	a.probes.Sync(pod, podIP, running)
}

func podKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }
