package agent

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/kuberuntime"
	"github.com/crib-dev/crib/internal/agent/podstatus"
)

// podPhase is where a pod is in its life on this node, as the kubelet's
// pod workers track it.
type podPhase int

const (
	// phaseSyncing: a manifest asks for the pod, and each sync runs it as
	// the manifest says.
	phaseSyncing podPhase = iota
	// phaseTerminating: no manifest asks for the pod (any more, or at all:
	// the runtime still holds it from before a restart), and each sync
	// tears it down until that is done.
	phaseTerminating
	// phaseTerminated: the teardown is done. The record stays while the
	// runtime still lists the pod, so that a relist or an event that finds
	// something of it has it torn down again; it goes with the first
	// teardown after the runtime stopped listing it.
	phaseTerminated
)

func (p podPhase) String() string {
	switch p {
	case phaseSyncing:
		return "syncing"
	case phaseTerminating:
		return "terminating"
	case phaseTerminated:
		return "terminated"
	}
	return "unknown"
}

// podRecord is everything the agent knows of one pod. The sync loop moves
// a pod between syncing and terminating as manifests come and go, and
// records what relists see; the rest is recorded by the pod's worker,
// which alone syncs the pod (package podworker serialises that). Only the
// pod table (table.go) writes a record, under its lock, and each change is
// one of its named transitions; everyone else reads copies it hands out.
type podRecord struct {
	uid   string
	phase podPhase
	// spec is the pod as its manifest last gave it. It stays when the
	// manifest goes, so that the pod is stopped with its hooks and grace
	// period; nil for a pod only the runtime knows.
	spec *corev1.Pod
	// version counts the manifest's changes to the pod: a decision or a
	// status reached from an older version does not stick to a newer one.
	version uint64
	// fresh says the manifest changed since a status was last shown: the
	// new version's status does not build on the old one's.
	fresh bool
	// firstSeen is when the agent first saw the pod's manifest: the
	// status's start time and where start latency is measured from.
	firstSeen time.Time
	// startMeasured says the pod's start latency was observed, or need not
	// be (it already ran when this agent started).
	startMeasured bool

	// admitted and rejected are the node's decision on the pod's current
	// version; neither is set until the first sync decides.
	admitted bool
	rejected *rejection
	// allocated is the version of the pod whose resources the node last
	// admitted, which its containers run with; nil until the first
	// admission. It differs from spec only while a resize (a change to
	// containers' resources alone) is pending: resizePending says why
	// (Infeasible or Deferred, the kubelet's PodResizePending reasons).
	allocated     *corev1.Pod
	resizePending *rejection
	// resizeError is why the last sync's resize in place failed, if it did.
	resizeError string
	// evicted says why the pod was evicted: it stays down until its
	// manifest changes.
	evicted string

	// fingerprint is what the pod looked like at the last relist; empty
	// when that relist did not find it.
	fingerprint string
	// runtime is the pod as the runtime last showed it: its containers'
	// statuses, its sandboxes' IPs, the grace periods its containers were
	// made with. The next observation takes what cannot have changed from
	// it.
	runtime *kuberuntime.PodRuntime
	// waiting says why containers are not running, by name, as the syncs
	// found it; the status shows it.
	waiting map[string]podstatus.Waiting
	// status is the status last shown for the pod, nil before the first:
	// the next status builds on it (transition times, start time, a
	// terminal phase) and counts restarts from it. The status API shows
	// the same, but the agent never reads it back.
	status *corev1.PodStatus
}

// wanted reports whether a manifest asks for the pod.
func (r *podRecord) wanted() bool { return r.phase == phaseSyncing }

// listed reports whether the last relist found the pod in the runtime.
func (r *podRecord) listed() bool { return r.fingerprint != "" }

// allocatedOr is what the node counts for the pod: the version it
// allocated, or its spec when it has none yet.
func (r *podRecord) allocatedOr() *corev1.Pod {
	if r.allocated != nil {
		return r.allocated
	}
	return r.spec
}
