package agent

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/crib-dev/crib/internal/agent/kuberuntime"
)

// podTable owns the agent's pod records, the lock that guards them and
// what the manifests' pods may draw on. It is the only code that changes
// a record, and every change is a method named for what happened: the
// manifests were applied, the runtime was relisted or observed, the node
// admitted a pod, a sync ended, a pod was evicted, a status was shown, a
// teardown ended. (The kubelet's podWorkers keep podSyncStatus the same
// way, behind completeSync, completeTerminating and their kin.)
//
// Nothing outside reads a record live: each transition hands back a copy
// of the record as it left it, and a sync carries on from that copy.
// Maps in a record are replaced, never changed in place, so a copy is
// safe to read without the lock.
type podTable struct {
	mu sync.Mutex
	// pods holds the record of every pod the agent knows of, by UID: one
	// a manifest asks for, the runtime holds, or whose teardown is not
	// done.
	pods map[string]*podRecord
	// data is what the manifests' pods may draw on.
	data kuberuntime.Data
	// sourced says the first manifest snapshot is applied. Until then a
	// pod without a record may still be asked for, so it is not torn down.
	sourced bool
}

func newPodTable() *podTable {
	return &podTable{pods: map[string]*podRecord{}}
}

// recordOf returns the pod's record, making one if the table did not know
// the pod: nothing asks for it yet, so it starts out terminating. The
// caller holds t.mu.
func (t *podTable) recordOf(uid string) *podRecord {
	rec := t.pods[uid]
	if rec == nil {
		rec = &podRecord{uid: uid, phase: phaseTerminating}
		t.pods[uid] = rec
	}
	return rec
}

// manifestsApplied records a manifest snapshot: pods (by UID) are what it
// asks for, data what they may draw on. It returns the pods whose sync it
// changes: those it adds, changes or removes, or, when data changed,
// every pod with a spec (their ConfigMap and Secret volumes may need new
// content, including those still being torn down).
func (t *podTable) manifestsApplied(pods map[string]*corev1.Pod, data kuberuntime.Data, now time.Time) (changed []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sourced = true
	for uid, p := range pods {
		if t.recordOf(uid).want(p, now) {
			changed = append(changed, uid)
		}
	}
	for uid, rec := range t.pods {
		if rec.wanted() && pods[uid] == nil {
			rec.unwant()
			changed = append(changed, uid)
		}
	}
	if !dataEqual(t.data, data) {
		changed = changed[:0]
		for uid, rec := range t.pods {
			if rec.spec != nil {
				changed = append(changed, uid)
			}
		}
	}
	t.data = data
	return changed
}

// relisted records what a relist of the runtime found, by pod UID. It
// returns the pods to sync: those whose containers changed since the last
// relist, those the runtime holds that no manifest asks for, those it no
// longer holds; with all set, every pod found or wanted. The first relist
// after a start (all) also adopts the wanted pods that run: the agent
// admitted them before, so they keep their place ahead of new pods, and
// their start was measured then.
func (t *podTable) relisted(pods map[string]*kuberuntime.PodRuntime, all bool) (dirty []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for uid, p := range pods {
		rec := t.recordOf(uid)
		fp := fingerprint(p)
		if all || rec.fingerprint != fp || !rec.wanted() {
			dirty = append(dirty, uid)
		}
		rec.fingerprint = fp
		rec.runtime = p
		if all && rec.wanted() && live(p) {
			if rec.rejected == nil {
				rec.admitted = true
			}
			rec.startMeasured = true
		}
	}
	for uid, rec := range t.pods {
		if _, found := pods[uid]; found {
			continue
		}
		rec.runtime = nil
		if rec.listed() {
			rec.fingerprint = ""
			dirty = append(dirty, uid)
		}
		if all && rec.wanted() {
			dirty = append(dirty, uid)
		}
	}
	return dirty
}

// beginSync hands a sync the pod's record, the data its pod may draw on,
// and whether the manifests were read yet. Once they were, a pod the table
// does not know of (an event or a relist named it) gets a record: it is
// torn down.
func (t *podTable) beginSync(uid string) (podRecord, kuberuntime.Data, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.sourced {
		return podRecord{uid: uid}, t.data, false
	}
	return *t.recordOf(uid), t.data, true
}

// observed records pr, what the runtime now holds of the pod, and hands
// back the record. A pod the table forgot meanwhile comes back terminated,
// with pr.
func (t *podTable) observed(uid string, pr *kuberuntime.PodRuntime) podRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	rec := t.pods[uid]
	if rec == nil {
		return podRecord{uid: uid, phase: phaseTerminated, runtime: pr}
	}
	rec.runtime = pr
	return *rec
}

// admission is the node's decision on one version of a pod.
type admission struct {
	// run is the version of the pod to run: the pod, or while a resize of
	// it is pending, the version the node last allocated. Nil when the pod
	// is rejected.
	run *corev1.Pod
	// rejected says why the pod may not run here.
	rejected *rejection
	// newlyRejected and newlyPending say what this decision changed, for
	// the log: the pod was rejected now, or its resize is pending for a
	// reason it was not pending for before.
	newlyRejected bool
	newlyPending  *rejection
	// stale says the manifest changed since the sync began: nothing was
	// decided, and the sync the change asked for decides.
	stale bool
}

// admit decides whether version of the pod may run on a node of the given
// capacity (zero: unknown, not checked) beside the pods already admitted;
// Agent.admit says how. The decision sticks until the manifest changes,
// but for a Deferred resize, which is tried again at every sync.
func (t *podTable) admit(uid string, version uint64, pod *corev1.Pod, milliCPU, memory int64) admission {
	t.mu.Lock()
	defer t.mu.Unlock()
	rec := t.pods[uid]
	if rec == nil || rec.version != version || !rec.wanted() {
		return admission{stale: true}
	}
	if rec.rejected != nil {
		return admission{rejected: rec.rejected}
	}
	pending := rec.resizePending
	if rec.admitted && (pending == nil || pending.Reason != corev1.PodReasonDeferred) {
		if pending != nil {
			return admission{run: rec.allocated}
		}
		return admission{run: pod}
	}
	var others []*corev1.Pod
	for id, other := range t.pods {
		if id != uid && other.admitted && other.wanted() {
			others = append(others, other.allocatedOr())
		}
	}
	if rec.allocated != nil && onlyResized(rec.allocated, pod) {
		if r := resizeFits(pod, others, milliCPU, memory); r != nil {
			a := admission{run: rec.allocated}
			if pending == nil || *pending != *r {
				a.newlyPending = r
			}
			rec.admitted, rec.resizePending = true, r
			return a
		}
	} else if r := fits(pod, others, milliCPU, memory); r != nil {
		rec.rejected = r
		return admission{rejected: r, newlyRejected: true}
	}
	rec.admitted, rec.allocated, rec.resizePending = true, pod, nil
	return admission{run: pod}
}

// synced records what a sync of the pod learned: res, the runtime
// manager's result, and after, what the runtime held after it (nil when
// that could not be read). It hands back the record.
func (t *podTable) synced(uid string, res kuberuntime.SyncResult, after *kuberuntime.PodRuntime) podRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	rec := t.pods[uid]
	if rec == nil {
		return podRecord{uid: uid, phase: phaseTerminated, runtime: after}
	}
	rec.waiting = res.Waiting.Apply(rec.waiting)
	rec.resizeError = res.ResizeError
	if after != nil {
		rec.runtime = after
	}
	return *rec
}

// evicted records that the pod, as spec, was evicted, msg saying why: it
// stays down until its manifest changes. It reports false, and records
// nothing, when spec is no longer what the manifest asks for.
func (t *podTable) evicted(uid string, spec *corev1.Pod, msg string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	rec := t.pods[uid]
	if rec == nil || !rec.wanted() || rec.spec != spec {
		return false
	}
	rec.evicted = msg
	return true
}

// shown is what a status shown for a pod changes in its metrics.
type shown struct {
	// previous is the status shown before, if any: its restart counts are
	// what the new one's are counted from.
	previous *corev1.PodStatus
	// started says the pod's start latency is to be observed now, counted
	// from firstSeen.
	started   bool
	firstSeen time.Time
}

// statusShown records st as the pod's status, computed from version of
// the pod, as the status API now shows it: the next status builds on it.
// With measureStart, a status with every container running measures the
// pod's start, once. It reports false, and records nothing, for a pod the
// table forgot: it has no status to show.
func (t *podTable) statusShown(uid string, version uint64, st corev1.PodStatus, measureStart bool) (shown, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rec := t.pods[uid]
	if rec == nil {
		return shown{}, false
	}
	out := shown{previous: rec.status}
	rec.status = st.DeepCopy()
	if rec.version == version {
		// The status of the current version: the next one builds on it.
		// (One of an older version leaves fresh set: the new version's
		// status starts over.)
		rec.fresh = false
	}
	if measureStart && !rec.startMeasured && allRunning(st) {
		rec.startMeasured = true
		out.started, out.firstSeen = true, rec.firstSeen
	}
	return out, true
}

// tornDown records that the pod's teardown is done. A pod whose manifest
// came back meanwhile keeps its record as it is, but for why its
// containers waited (they are gone), for the next sync to start it
// afresh. Any other is terminated, and forgotten once the runtime no
// longer lists it; tornDown reports whether it was terminated, so that
// it leaves the status API.
func (t *podTable) tornDown(uid string) (terminated bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rec := t.pods[uid]
	if rec == nil {
		return false
	}
	rec.waiting = nil
	if rec.wanted() {
		return false
	}
	rec.terminated()
	if !rec.listed() {
		delete(t.pods, uid)
	}
	return true
}

// snapshot returns a copy of the pod's record, if the table knows the pod.
func (t *podTable) snapshot(uid string) (podRecord, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rec := t.pods[uid]
	if rec == nil {
		return podRecord{}, false
	}
	return *rec, true
}

// wanted are the pods a manifest asks for, as copies of their records.
func (t *podTable) wanted() map[string]podRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]podRecord, len(t.pods))
	for uid, rec := range t.pods {
		if rec.wanted() {
			out[uid] = *rec
		}
	}
	return out
}

// wantedUIDs are the pods a manifest asks for.
func (t *podTable) wantedUIDs() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.pods))
	for uid, rec := range t.pods {
		if rec.wanted() {
			out = append(out, uid)
		}
	}
	return out
}

// known reports whether a manifest asks for the pod or the runtime lists
// it.
func (t *podTable) known(uid string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	rec := t.pods[uid]
	return rec != nil && (rec.wanted() || rec.listed())
}

// lastObserved is what the runtime last showed of each pod, for the next
// relist to build on.
func (t *podTable) lastObserved() map[string]*kuberuntime.PodRuntime {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]*kuberuntime.PodRuntime, len(t.pods))
	for uid, rec := range t.pods {
		if rec.runtime != nil {
			out[uid] = rec.runtime
		}
	}
	return out
}

// The record's own transitions, which only the table's methods call, under
// its lock.

// want makes p, a manifest's version of the pod, the one to run. It
// reports whether that changes what the pod runs: a pod newly wanted or a
// new version, which the node admits afresh and which is no longer
// evicted.
func (r *podRecord) want(p *corev1.Pod, now time.Time) (changed bool) {
	wasWanted := r.wanted()
	changed = !wasWanted || !podEqual(r.spec, p)
	if changed {
		r.version++
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
	r.status = nil
}

func podEqual(a, b *corev1.Pod) bool {
	return equality.Semantic.DeepEqual(a.Spec, b.Spec) &&
		equality.Semantic.DeepEqual(a.Labels, b.Labels) &&
		equality.Semantic.DeepEqual(a.Annotations, b.Annotations)
}

func dataEqual(a, b kuberuntime.Data) bool {
	return equality.Semantic.DeepEqual(a.ConfigMaps, b.ConfigMaps) &&
		equality.Semantic.DeepEqual(a.Secrets, b.Secrets)
}
