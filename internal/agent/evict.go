package agent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/kuberuntime"
	"github.com/crib-dev/crib/internal/agent/volume"
)

// usageCheckInterval is how often disk-backed emptyDirs are measured
// against their sizeLimit; measuring walks every file, so not on every
// housekeeping tick.
const usageCheckInterval = 10 * time.Second

const reasonEvicted = "Evicted"

// checkVolumeUsage evicts every pod with a disk-backed emptyDir over its
// sizeLimit. The kubelet exempts static pods from eviction as critical; in
// crib every pod is static, so that exemption would make sizeLimit
// meaningless, and crib enforces it: the pod is stopped and shown Failed
// with reason Evicted until its manifest changes.
func (a *Agent) checkVolumeUsage() {
	for _, uid := range a.wantedUIDs() {
		pod, evicted := a.wantedPod(uid)
		if pod == nil || !hasDiskLimit(pod) || evicted != "" {
			continue
		}
		usage, err := a.volumes.Usage(uid)
		if err != nil {
			continue
		}
		name, over := volume.OverLimit(pod, usage)
		if !over {
			continue
		}
		msg := fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q.", name, limitOf(pod, name))
		a.withRecord(uid, func(rec *podRecord) { rec.evicted = msg })
		a.events.Event(pod, corev1.EventTypeWarning, reasonEvicted, msg)
		a.workers.Sync(uid)
	}
}

func hasDiskLimit(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumDefault && v.EmptyDir.SizeLimit != nil {
			return true
		}
	}
	return false
}

func limitOf(pod *corev1.Pod, name string) string {
	for _, v := range pod.Spec.Volumes {
		if v.Name == name && v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil {
			return v.EmptyDir.SizeLimit.String()
		}
	}
	return ""
}

// evictionOf says why the pod was evicted, or "".
func (a *Agent) evictionOf(uid string) (msg string) {
	a.withRecord(uid, func(rec *podRecord) { msg = rec.evicted })
	return msg
}

// keepEvicted stops an evicted pod's containers and records it Failed.
// last is what the sync observed of it.
func (a *Agent) keepEvicted(ctx context.Context, pod *corev1.Pod, msg string, last *kuberuntime.PodRuntime) time.Duration {
	uid := string(pod.UID)
	pr, err := a.observe(ctx, uid, last)
	if err != nil {
		return a.cfg.ErrorRequeue
	}
	if err := a.rt.KillPod(ctx, pod, pr.Observed); err != nil {
		a.log.Warn("stop evicted pod", "pod", podKey(pod), "err", err)
		return a.cfg.ErrorRequeue
	}
	a.probes.RemovePod(uid)
	if after, err := a.observe(ctx, uid, pr); err == nil {
		pr = after
	}
	st := a.computeStatus(pod, pr.Observed, "", false)
	st.Phase = corev1.PodFailed
	st.Reason = reasonEvicted
	st.Message = msg
	a.storeStatus(pod, pr.Observed, st)
	return 0
}
