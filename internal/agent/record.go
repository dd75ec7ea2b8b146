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
// records what relists see; everything else is written by the pod's
// worker, which alone syncs the pod (package podworker serialises that).
// Every field is guarded by Agent.mu; a sync works on a copy (see
// beginSync), so maps in a record are replaced, never changed in place.
type podRecord struct {
	phase podPhase
	// spec is the pod as its manifest last gave it. It stays when the
	// manifest goes, so that the pod is stopped with its hooks and grace
	// period; nil for a pod only the runtime knows.
	spec *corev1.Pod
	// fresh says the manifest changed since the status was last computed:
	// the new version's status does not build on the old one's.
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
}

// wanted reports whether a manifest asks for the pod.
func (r *podRecord) wanted() bool { return r.phase == phaseSyncing }

// listed reports whether the last relist found the pod in the runtime.
func (r *podRecord) listed() bool { return r.fingerprint != "" }

// want makes p, a manifest's version of the pod, the one to run. It
// reports whether that changes what the pod runs: a pod newly wanted or a
// new version, which the node admits afresh and which is no longer
// evicted.
func (r *podRecord) want(p *corev1.Pod, now time.Time) (changed bool) {
	wasWanted := r.wanted()
	changed = !wasWanted || !podEqual(r.spec, p)
	if changed {
		r.evicted = ""
		r.forgetAdmission()
		if wasWanted {
			// A new version of a pod: its status starts over.
			r.fresh = true
		}
	}
	r.phase = phaseSyncing
	r.spec = p
	if r.firstSeen.IsZero() {
		r.firstSeen = now
	}
	return changed
}

// unwant marks the pod's manifest gone: the pod is to be torn down.
func (r *podRecord) unwant() {
	r.phase = phaseTerminating
	r.forgetAdmission()
}

// forgetAdmission makes the next sync decide about the pod afresh. What
// was allocated stays: a resize is decided against it.
func (r *podRecord) forgetAdmission() {
	r.admitted = false
	r.rejected = nil
	r.resizePending = nil
}

// terminated records a completed teardown: nothing of the pod is left to
// know but what the last relist saw.
func (r *podRecord) terminated() {
	r.phase = phaseTerminated
	r.spec = nil
	r.fresh = false
	r.firstSeen = time.Time{}
	r.startMeasured = false
	r.evicted = ""
	r.forgetAdmission()
	r.allocated = nil
}
