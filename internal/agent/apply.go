package agent

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/crib-dev/crib/internal/agent/kuberuntime"
	"github.com/crib-dev/crib/internal/agent/source"
	"github.com/crib-dev/crib/internal/agent/statusapi"
)

// apply takes a new manifest snapshot and, when sync is set, syncs every
// pod it adds, changes or removes.
func (a *Agent) apply(snap source.Snapshot, sync bool) {
	next := map[string]*corev1.Pod{}
	for _, p := range snap.Pods {
		next[string(p.UID)] = p
	}
	errs := make([]statusapi.SourceError, 0, len(snap.Errors))
	for _, e := range snap.Errors {
		errs = append(errs, statusapi.SourceError{Path: e.Path, Message: e.Error()})
		a.events.Record(corev1.ObjectReference{Kind: "Manifest", Name: e.Path}, corev1.EventTypeWarning, "InvalidManifest", e.Error())
	}
	a.store.SetSourceErrors(errs)

	a.mu.Lock()
	a.sourced = true
	now := a.cfg.Clock.Now()
	var changed []string
	for uid, p := range next {
		if a.recordOf(uid).want(p, now) {
			changed = append(changed, uid)
		}
	}
	for uid, rec := range a.pods {
		if rec.wanted() && next[uid] == nil {
			rec.unwant()
			changed = append(changed, uid)
		}
	}
	if !dataEqual(a.data, snap) {
		// ConfigMap and Secret volumes of every pod with a spec may need
		// new content, including those still being torn down.
		changed = changed[:0]
		for uid, rec := range a.pods {
			if rec.spec != nil {
				changed = append(changed, uid)
			}
		}
	}
	a.data = kuberuntime.Data{ConfigMaps: snap.ConfigMaps, Secrets: snap.Secrets}
	a.mu.Unlock()
	if len(changed) > 0 || !a.qosSet {
		a.qosSet = true
		a.updateQOS(snap.Pods)
	}
	if !sync {
		return
	}
	for _, uid := range changed {
		a.workers.Sync(uid)
	}
}

// updateQOS gives the QoS cgroups their CPU shares from the pods the node
// runs, as the kubelet does whenever pods come, go or change.
func (a *Agent) updateQOS(pods []*corev1.Pod) {
	if a.cgroups == nil {
		return
	}
	if err := a.cgroups.UpdateQOS(pods); err != nil {
		a.log.Warn("update QoS cgroups", "err", err)
	}
}

func podEqual(a, b *corev1.Pod) bool {
	return equality.Semantic.DeepEqual(a.Spec, b.Spec) &&
		equality.Semantic.DeepEqual(a.Labels, b.Labels) &&
		equality.Semantic.DeepEqual(a.Annotations, b.Annotations)
}

func dataEqual(d kuberuntime.Data, snap source.Snapshot) bool {
	return equality.Semantic.DeepEqual(d.ConfigMaps, snap.ConfigMaps) &&
		equality.Semantic.DeepEqual(d.Secrets, snap.Secrets)
}
