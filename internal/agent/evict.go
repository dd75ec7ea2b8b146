package agent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

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
	for uid, rec := range a.table.wanted() {
		pod := rec.spec
		if !hasDiskLimit(pod) || rec.evicted != "" {
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
		if !a.table.evicted(uid, pod, msg) {
			continue // a new version came meanwhile: it is measured next time
		}
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

// keepEvicted stops an evicted pod's containers and shows it Failed. rec
// is its record with what the sync observed of it.
func (a *Agent) keepEvicted(ctx context.Context, rec podRecord) time.Duration {
	pod, msg := rec.spec, rec.evicted
	if err := a.rt.KillPod(ctx, pod, rec.runtime.Observed); err != nil {
		a.log.Warn("stop evicted pod", "pod", podKey(pod), "err", err)
		return a.cfg.ErrorRequeue
	}
	a.probes.RemovePod(rec.uid)
	if after, err := a.observe(ctx, rec); err == nil {
		rec = after
	}
	st := statusOf(rec, pod, a.view(pod, rec.runtime.Observed))
	st.Phase = corev1.PodFailed
	st.Reason = reasonEvicted
	st.Message = msg
	a.showStatus(rec, pod, rec.runtime.Observed, st, true)
	return 0
}
