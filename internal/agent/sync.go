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
// or tears it down.
func (a *Agent) syncPod(ctx context.Context, uid string) time.Duration {
	began := a.cfg.Clock.Now()
	defer func() { a.metrics.ObserveSync(a.cfg.Clock.Since(began)) }()

	rec, data, sourced := a.beginSync(uid)
	if !sourced {
		// An event or a probe named the pod before the manifests were
		// read: whether it is wanted is not known yet.
		return a.cfg.ErrorRequeue
	}
	pr, err := a.observe(ctx, uid, rec.runtime)
	if err != nil {
		a.log.Warn("observe pod", "uid", uid, "err", err)
		return a.cfg.ErrorRequeue
	}
	if rec.phase == phaseSyncing {
		return a.runPod(ctx, rec.spec, data, pr)
	}
	// Terminating, or terminated and named again by a relist or an event:
	// a teardown removes whatever is left, and is idempotent.
	return a.terminate(ctx, uid, rec.spec, pr)
}

// observe reads what the runtime holds of the pod, building on last, its
// previous observation, and keeps it in the pod's record.
func (a *Agent) observe(ctx context.Context, uid string, last *kuberuntime.PodRuntime) (*kuberuntime.PodRuntime, error) {
	pr, err := a.rt.ObservePod(ctx, uid, last)
	if err != nil {
		return nil, err
	}
	a.withRecord(uid, func(rec *podRecord) { rec.runtime = pr })
	return pr, nil
}

// runPod runs a pod a manifest asks for, from pr, what the runtime holds
// of it: the node decides whether the pod may run at all (eviction,
// admission), the runtime manager plans and acts, and the status comes
// from what the runtime holds after.
func (a *Agent) runPod(ctx context.Context, pod *corev1.Pod, data kuberuntime.Data, pr *kuberuntime.PodRuntime) time.Duration {
	uid := string(pod.UID)
	if msg := a.evictionOf(uid); msg != "" {
		return a.keepEvicted(ctx, pod, msg, pr)
	}
	run, r := a.admit(pod)
	if r != nil {
		return a.keepRejected(ctx, pod, pr, r)
	}

	obs, err := a.rt.CollectGarbage(ctx, pr)
	if err != nil {
		a.log.Warn("collect garbage", "pod", podKey(pod), "err", err)
	}
	// run is the pod as allocated: while a resize of it is pending, its
	// containers keep the resources they have.
	res := a.rt.SyncPod(ctx, run, obs, data)
	a.withRecord(uid, func(rec *podRecord) {
		rec.waiting = res.Waiting.Apply(rec.waiting)
		rec.resizeError = res.ResizeError
	})
	if res.Err != nil {
		a.logSyncError(pod, res.Err)
	}

	if after, err := a.observe(ctx, uid, pr.Forget(res.Resized)); err == nil {
		obs = after.Observed
	}
	a.syncProbes(run, obs)
	a.storeStatus(pod, obs, a.computeStatus(pod, obs, res.SandboxError, false))
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
