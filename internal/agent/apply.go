package agent

import (
	corev1 "k8s.io/api/core/v1"

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

	changed := a.table.manifestsApplied(next, kuberuntime.Data{ConfigMaps: snap.ConfigMaps, Secrets: snap.Secrets}, a.cfg.Clock.Now())
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
