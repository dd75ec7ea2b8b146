package agent

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/kuberuntime"
)

// recordOf returns the pod's record, making one if the agent did not know
// the pod: nothing asks for it yet, so it starts out terminating. The
// caller holds a.mu.
func (a *Agent) recordOf(uid string) *podRecord {
	rec := a.pods[uid]
	if rec == nil {
		rec = &podRecord{phase: phaseTerminating}
		a.pods[uid] = rec
	}
	return rec
}

// beginSync returns a copy of the pod's record for a sync to work from,
// the data its pod may draw on, and whether the manifests were read yet.
// Once they were, a pod the agent does not know of (an event or a relist
// named it) gets a record: it is torn down.
func (a *Agent) beginSync(uid string) (podRecord, kuberuntime.Data, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.sourced {
		return podRecord{}, a.data, false
	}
	return *a.recordOf(uid), a.data, true
}

// wantedUIDs are the pods a manifest asks for.
func (a *Agent) wantedUIDs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.pods))
	for uid, rec := range a.pods {
		if rec.wanted() {
			out = append(out, uid)
		}
	}
	return out
}

// wantedPod returns the pod's spec and why it was evicted, or a nil spec
// when no manifest asks for it.
func (a *Agent) wantedPod(uid string) (pod *corev1.Pod, evicted string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	rec := a.pods[uid]
	if rec == nil || !rec.wanted() {
		return nil, ""
	}
	return rec.spec, rec.evicted
}

// lastObserved is what the runtime last showed of each pod, for the next
// relist to build on.
func (a *Agent) lastObserved() map[string]*kuberuntime.PodRuntime {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]*kuberuntime.PodRuntime, len(a.pods))
	for uid, rec := range a.pods {
		if rec.runtime != nil {
			out[uid] = rec.runtime
		}
	}
	return out
}

// withRecord runs fn on the pod's record under a.mu, if the agent still
// has one.
func (a *Agent) withRecord(uid string, fn func(*podRecord)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if rec := a.pods[uid]; rec != nil {
		fn(rec)
	}
}
