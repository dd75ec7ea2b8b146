package agent

import (
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crib-dev/crib/internal/agent/kuberuntime"
	"github.com/crib-dev/crib/internal/agent/plan"
	"github.com/crib-dev/crib/internal/agent/podstatus"
)

var tableT0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// tablePod is a pod with one container asking for cpu millicores and
// memory bytes.
func tablePod(name string, cpu, memory int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "app",
			Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(memory, resource.BinarySI),
			}},
		}}},
	}
}

func withRequests(p *corev1.Pod, cpu int64) *corev1.Pod {
	p = p.DeepCopy()
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(cpu, resource.DecimalSI)
	return p
}

func runningPod(uid, id string) *kuberuntime.PodRuntime {
	return &kuberuntime.PodRuntime{UID: uid, Observed: plan.Observed{
		Sandboxes:  []plan.Sandbox{{ID: "sb-" + id, State: plan.SandboxReady}},
		Containers: []plan.Container{{ID: id, Name: "app", State: plan.ContainerRunning}},
	}}
}

func manifests(pods ...*corev1.Pod) map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	for _, p := range pods {
		out[string(p.UID)] = p
	}
	return out
}

func mustSnapshot(t *testing.T, tab *podTable, uid string) podRecord {
	t.Helper()
	rec, ok := tab.snapshot(uid)
	if !ok {
		t.Fatalf("the table has no record of %s", uid)
	}
	return rec
}

func TestTableManifestsApplied(t *testing.T) {
	web, db := tablePod("web", 100, 1<<20), tablePod("db", 100, 1<<20)
	edited := withRequests(web, 200)
	cm := kuberuntime.Data{ConfigMaps: map[string]*corev1.ConfigMap{"default/cm": {Data: map[string]string{"k": "v"}}}}
	for _, tc := range []struct {
		name        string
		first, then map[string]*corev1.Pod
		data        kuberuntime.Data
		changed     []string
		check       func(t *testing.T, tab *podTable)
	}{{
		name:  "the same manifests again change nothing",
		first: manifests(web, db), then: manifests(web.DeepCopy(), db),
		check: func(t *testing.T, tab *podTable) {
			if rec := mustSnapshot(t, tab, "uid-web"); rec.version != 1 || rec.fresh || !rec.firstSeen.Equal(tableT0) {
				t.Errorf("web: version %d fresh %v firstSeen %v", rec.version, rec.fresh, rec.firstSeen)
			}
		},
	}, {
		name:  "an edit is a new version whose status starts over",
		first: manifests(web, db), then: manifests(edited, db), changed: []string{"uid-web"},
		check: func(t *testing.T, tab *podTable) {
			if rec := mustSnapshot(t, tab, "uid-web"); rec.version != 2 || !rec.fresh || rec.spec != edited || !rec.firstSeen.Equal(tableT0) {
				t.Errorf("web: version %d fresh %v edited %v firstSeen %v", rec.version, rec.fresh, rec.spec == edited, rec.firstSeen)
			}
		},
	}, {
		name:  "a manifest gone leaves its pod terminating with its spec",
		first: manifests(web, db), then: manifests(db), changed: []string{"uid-web"},
		check: func(t *testing.T, tab *podTable) {
			if rec := mustSnapshot(t, tab, "uid-web"); rec.phase != phaseTerminating || rec.spec != web {
				t.Errorf("web: phase %s spec kept %v", rec.phase, rec.spec == web)
			}
			if got := tab.wantedUIDs(); !reflect.DeepEqual(got, []string{"uid-db"}) {
				t.Errorf("wanted %v, want [uid-db]", got)
			}
		},
	}, {
		name:  "new data syncs every pod with a spec",
		first: manifests(web, db), then: manifests(db), data: cm, changed: []string{"uid-db", "uid-web"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tab := newPodTable()
			if got := sorted(tab.manifestsApplied(tc.first, kuberuntime.Data{}, tableT0)); len(got) != len(tc.first) {
				t.Fatalf("first snapshot changed %v, want every pod", got)
			}
			got := sorted(tab.manifestsApplied(tc.then, tc.data, tableT0.Add(time.Minute)))
			if !reflect.DeepEqual(got, sorted(tc.changed)) {
				t.Errorf("changed %v, want %v", got, tc.changed)
			}
			if tc.check != nil {
				tc.check(t, tab)
			}
		})
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	if s == nil {
		return []string{}
	}
	return s
}

func TestTableRelisted(t *testing.T) {
	web := tablePod("web", 100, 1<<20)
	tab := newPodTable()
	tab.manifestsApplied(manifests(web), kuberuntime.Data{}, tableT0)

	// The first relist after a start adopts the running pod: admitted
	// and measured before; a stray pod the runtime holds is to go.
	dirty := tab.relisted(map[string]*kuberuntime.PodRuntime{"uid-web": runningPod("uid-web", "c1"), "stray": runningPod("stray", "c9")}, true)
	if got := sorted(dirty); !reflect.DeepEqual(got, []string{"stray", "uid-web"}) {
		t.Errorf("first relist: dirty %v", got)
	}
	rec := mustSnapshot(t, tab, "uid-web")
	if !rec.admitted || !rec.startMeasured || !rec.listed() || rec.runtime == nil {
		t.Errorf("adopted web: admitted %v measured %v listed %v", rec.admitted, rec.startMeasured, rec.listed())
	}
	if stray := mustSnapshot(t, tab, "stray"); stray.phase != phaseTerminating {
		t.Errorf("stray: phase %s, want terminating", stray.phase)
	}

	// Nothing changed: only what no manifest asks for is synced again.
	dirty = tab.relisted(map[string]*kuberuntime.PodRuntime{"uid-web": runningPod("uid-web", "c1"), "stray": runningPod("stray", "c9")}, false)
	if !reflect.DeepEqual(dirty, []string{"stray"}) {
		t.Errorf("unchanged relist: dirty %v, want [stray]", dirty)
	}
	// A container changed; the stray pod is gone.
	dirty = tab.relisted(map[string]*kuberuntime.PodRuntime{"uid-web": runningPod("uid-web", "c2")}, false)
	if got := sorted(dirty); !reflect.DeepEqual(got, []string{"stray", "uid-web"}) {
		t.Errorf("changed relist: dirty %v", got)
	}
	if stray := mustSnapshot(t, tab, "stray"); stray.listed() || stray.runtime != nil {
		t.Error("stray: still listed after a relist that did not find it")
	}
	if last := tab.lastObserved(); len(last) != 1 || last["uid-web"].Observed.Containers[0].ID != "c2" {
		t.Errorf("lastObserved %v, want web's c2 only", last)
	}
}

func TestTableAdmit(t *testing.T) {
	big, small := tablePod("big", 3000, 1<<20), tablePod("small", 500, 1<<20)
	const cpu, mem = 3500, 1 << 30
	for _, tc := range []struct {
		name string
		// admitted are admitted first, in order; then pod is admitted.
		admitted []*corev1.Pod
		pod      *corev1.Pod
		// resizeTo, when set, is applied as an edit after pod's admission
		// and admitted again.
		resizeTo     *corev1.Pod
		wantRun      *corev1.Pod
		wantRejected string
		wantPending  string
	}{
		{name: "fits", admitted: []*corev1.Pod{small}, pod: big, wantRun: big},
		{name: "does not fit beside the admitted", admitted: []*corev1.Pod{big}, pod: withName(big, "big2"), wantRejected: "OutOfcpu"},
		{name: "a resize that fits runs the new version", admitted: []*corev1.Pod{small}, pod: big, resizeTo: withRequests(big, 2000), wantRun: withRequests(big, 2000)},
		{name: "a resize beside the others is deferred", admitted: []*corev1.Pod{big}, pod: small, resizeTo: withRequests(small, 1000), wantRun: small, wantPending: corev1.PodReasonDeferred},
		{name: "a resize past the node is infeasible", pod: small, resizeTo: withRequests(small, 9000), wantRun: small, wantPending: corev1.PodReasonInfeasible},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := newPodTable()
			all := append(slices.Clone(tc.admitted), tc.pod)
			tab.manifestsApplied(manifests(all...), kuberuntime.Data{}, tableT0)
			admit := func(p *corev1.Pod) admission {
				rec := mustSnapshot(t, tab, string(p.UID))
				return tab.admit(rec.uid, rec.version, rec.spec, cpu, mem)
			}
			for _, p := range tc.admitted {
				if a := admit(p); a.run != p {
					t.Fatalf("%s: not admitted: %+v", p.Name, a.rejected)
				}
			}
			a := admit(tc.pod)
			if tc.resizeTo != nil {
				all[len(all)-1] = tc.resizeTo
				tab.manifestsApplied(manifests(all...), kuberuntime.Data{}, tableT0)
				a = admit(tc.resizeTo)
			}
			switch {
			case tc.wantRejected != "":
				if a.rejected == nil || a.rejected.Reason != tc.wantRejected || !a.newlyRejected || a.run != nil {
					t.Fatalf("admission %+v, want rejected %s", a, tc.wantRejected)
				}
				// The decision sticks, and is not news any more.
				if again := admit(tc.pod); again.rejected != a.rejected || again.newlyRejected {
					t.Errorf("second admission %+v, want the same rejection, not newly", again)
				}
			case !equalPods(a.run, tc.wantRun):
				t.Fatalf("runs %v, want %v", podName(a.run), podName(tc.wantRun))
			}
			rec := mustSnapshot(t, tab, string(tc.pod.UID))
			gotPending := ""
			if rec.resizePending != nil {
				gotPending = rec.resizePending.Reason
			}
			if gotPending != tc.wantPending || (tc.wantPending != "") != (a.newlyPending != nil) {
				t.Errorf("resize pending %q (newly %v), want %q", gotPending, a.newlyPending != nil, tc.wantPending)
			}
		})
	}
}

func withName(p *corev1.Pod, name string) *corev1.Pod {
	p = p.DeepCopy()
	p.Name, p.UID = name, types.UID("uid-"+name)
	return p
}

func equalPods(a, b *corev1.Pod) bool { return a == b || (a != nil && b != nil && podEqual(a, b)) }

func podName(p *corev1.Pod) string {
	if p == nil {
		return "nothing"
	}
	return p.Name + " " + p.Spec.Containers[0].Resources.Requests.Cpu().String()
}

// A decision asked for an older version of the pod is stale: nothing is
// recorded, and the newer version is decided on its own.
func TestTableAdmitStale(t *testing.T) {
	web := tablePod("web", 100, 1<<20)
	tab := newPodTable()
	tab.manifestsApplied(manifests(web), kuberuntime.Data{}, tableT0)
	old := mustSnapshot(t, tab, "uid-web")
	tab.manifestsApplied(manifests(withRequests(web, 200)), kuberuntime.Data{}, tableT0)
	if a := tab.admit(old.uid, old.version, old.spec, 0, 0); !a.stale {
		t.Fatalf("admission of an old version: %+v, want stale", a)
	}
	if rec := mustSnapshot(t, tab, "uid-web"); rec.admitted || rec.allocated != nil {
		t.Error("a stale admission was recorded")
	}
}

func TestTableSyncedEvictedTornDown(t *testing.T) {
	web := tablePod("web", 100, 1<<20)
	tab := newPodTable()
	tab.manifestsApplied(manifests(web), kuberuntime.Data{}, tableT0)
	first := runningPod("uid-web", "c1")
	tab.observed("uid-web", first)

	crash := &podstatus.Waiting{Reason: "CrashLoopBackOff"}
	rec := tab.synced("uid-web", kuberuntime.SyncResult{Waiting: kuberuntime.WaitingChanges{"app": crash}, ResizeError: "no"}, nil)
	if rec.waiting["app"] != *crash || rec.resizeError != "no" || rec.runtime != first {
		t.Errorf("synced without an observation after: waiting %v resizeError %q runtime kept %v", rec.waiting, rec.resizeError, rec.runtime == first)
	}
	after := runningPod("uid-web", "c2")
	rec = tab.synced("uid-web", kuberuntime.SyncResult{Waiting: kuberuntime.WaitingChanges{"app": nil}}, after)
	if len(rec.waiting) != 0 || rec.resizeError != "" || rec.runtime != after {
		t.Errorf("synced: waiting %v resizeError %q runtime after %v", rec.waiting, rec.resizeError, rec.runtime == after)
	}

	// Eviction sticks to the version measured, not to a newer one.
	if tab.evicted("uid-web", web.DeepCopy(), "too big") {
		t.Error("evicted recorded for a spec that is not the pod's")
	}
	if !tab.evicted("uid-web", web, "too big") || mustSnapshot(t, tab, "uid-web").evicted != "too big" {
		t.Error("eviction not recorded")
	}
	tab.manifestsApplied(manifests(withRequests(web, 200)), kuberuntime.Data{}, tableT0)
	if rec := mustSnapshot(t, tab, "uid-web"); rec.evicted != "" {
		t.Errorf("a new version is still evicted: %q", rec.evicted)
	}

	// A wanted pod keeps its record through a teardown.
	tab.synced("uid-web", kuberuntime.SyncResult{Waiting: kuberuntime.WaitingChanges{"app": crash}}, nil)
	if tab.tornDown("uid-web") {
		t.Error("tornDown terminated a pod a manifest asks for")
	}
	if rec := mustSnapshot(t, tab, "uid-web"); rec.phase != phaseSyncing || rec.spec == nil || rec.waiting != nil {
		t.Errorf("wanted pod after a teardown: phase %s spec %v waiting %v", rec.phase, rec.spec != nil, rec.waiting)
	}

	// Gone from the manifests but listed: terminated, kept while listed.
	tab.relisted(map[string]*kuberuntime.PodRuntime{"uid-web": after}, false)
	tab.statusShown("uid-web", 2, corev1.PodStatus{Phase: corev1.PodRunning}, false)
	tab.manifestsApplied(nil, kuberuntime.Data{}, tableT0)
	if !tab.tornDown("uid-web") {
		t.Fatal("tornDown did not terminate an unwanted pod")
	}
	if rec := mustSnapshot(t, tab, "uid-web"); rec.phase != phaseTerminated || rec.spec != nil || rec.status != nil || !rec.firstSeen.IsZero() {
		t.Errorf("terminated: phase %s spec %v status %v firstSeen %v", rec.phase, rec.spec, rec.status, rec.firstSeen)
	}
	// Not listed any more: the next teardown forgets it.
	tab.relisted(nil, false)
	if !tab.tornDown("uid-web") {
		t.Error("tornDown of a terminated pod reported no termination")
	}
	if _, ok := tab.snapshot("uid-web"); ok {
		t.Error("an unlisted terminated pod is still in the table")
	}
	if _, ok := tab.statusShown("uid-web", 2, corev1.PodStatus{}, true); ok {
		t.Error("a status was shown for a pod the table forgot")
	}
}

func TestTableStatusShown(t *testing.T) {
	web := tablePod("web", 100, 1<<20)
	running := corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
		{Name: "app", RestartCount: 1, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
	}}
	tab := newPodTable()
	tab.manifestsApplied(manifests(web), kuberuntime.Data{}, tableT0)

	pending := corev1.PodStatus{Phase: corev1.PodPending}
	s, ok := tab.statusShown("uid-web", 1, pending, true)
	if !ok || s.previous != nil || s.started {
		t.Fatalf("first status: %+v ok %v", s, ok)
	}
	// Not measured for an interim status, then once for the real one.
	if s, _ = tab.statusShown("uid-web", 1, running, false); s.started || s.previous.Phase != corev1.PodPending {
		t.Errorf("interim status: %+v", s)
	}
	if s, _ = tab.statusShown("uid-web", 1, running, true); !s.started || !s.firstSeen.Equal(tableT0) {
		t.Errorf("all running: %+v, want the start measured from first seen", s)
	}
	if s, _ = tab.statusShown("uid-web", 1, running, true); s.started || s.previous.ContainerStatuses[0].RestartCount != 1 {
		t.Errorf("again: %+v, want no second measure and the previous restart count", s)
	}

	// A status of an older version leaves the new one fresh.
	tab.manifestsApplied(manifests(withRequests(web, 200)), kuberuntime.Data{}, tableT0)
	tab.statusShown("uid-web", 1, running, true)
	if !mustSnapshot(t, tab, "uid-web").fresh {
		t.Error("a status of version 1 made version 2 build on it")
	}
	tab.statusShown("uid-web", 2, running, true)
	if rec := mustSnapshot(t, tab, "uid-web"); rec.fresh || rec.status.Phase != corev1.PodRunning {
		t.Errorf("after version 2's status: fresh %v status %v", rec.fresh, rec.status)
	}
}

// statusOf is a pure function of a record and a view: the record is
// unchanged, and the same inputs give the same status.
func TestStatusOf(t *testing.T) {
	web := tablePod("web", 100, 1<<20)
	obs := runningPod("uid-web", "c1").Observed
	failed := &corev1.PodStatus{Phase: corev1.PodFailed, StartTime: &metav1.Time{Time: tableT0.Add(-time.Hour)}}
	base := podRecord{uid: "uid-web", phase: phaseSyncing, spec: web, version: 1, firstSeen: tableT0, runtime: &kuberuntime.PodRuntime{Observed: obs}}
	view := runtimeView{Observed: obs, Now: tableT0.Add(time.Minute), HostIP: "10.0.0.1"}
	for _, tc := range []struct {
		name  string
		rec   func(r *podRecord)
		view  func(v *runtimeView)
		check func(t *testing.T, st corev1.PodStatus)
	}{{
		name: "running",
		check: func(t *testing.T, st corev1.PodStatus) {
			if st.Phase != corev1.PodRunning || !st.StartTime.Time.Equal(tableT0) || st.HostIP != "10.0.0.1" {
				t.Errorf("phase %s start %v hostIP %q", st.Phase, st.StartTime, st.HostIP)
			}
		},
	}, {
		name: "a terminal phase shown before sticks",
		rec:  func(r *podRecord) { r.status = failed },
		check: func(t *testing.T, st corev1.PodStatus) {
			if st.Phase != corev1.PodFailed || !st.StartTime.Time.Equal(failed.StartTime.Time) {
				t.Errorf("phase %s start %v, want Failed from before", st.Phase, st.StartTime)
			}
		},
	}, {
		name: "a new version starts over",
		rec:  func(r *podRecord) { r.status, r.fresh = failed, true },
		check: func(t *testing.T, st corev1.PodStatus) {
			if st.Phase != corev1.PodRunning || !st.StartTime.Time.Equal(tableT0) {
				t.Errorf("phase %s start %v, want Running from first seen", st.Phase, st.StartTime)
			}
		},
	}, {
		name: "the view's waiting wins over the record's",
		rec: func(r *podRecord) {
			r.runtime, r.waiting = nil, map[string]podstatus.Waiting{"app": {Reason: "ErrImagePull"}}
		},
		view: func(v *runtimeView) {
			v.Observed = plan.Observed{}
			v.Waiting = map[string]podstatus.Waiting{"app": {Reason: podstatus.ReasonContainerCreating, Message: "pulling"}}
		},
		check: func(t *testing.T, st corev1.PodStatus) {
			if w := st.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != podstatus.ReasonContainerCreating {
				t.Errorf("app waits %+v, want ContainerCreating", w)
			}
		},
	}, {
		name: "a pending resize shows",
		rec: func(r *podRecord) {
			r.allocated = web
			r.spec = withRequests(web, 9000)
			r.resizePending = &rejection{Reason: corev1.PodReasonInfeasible, Message: "too big"}
		},
		check: func(t *testing.T, st corev1.PodStatus) {
			i := slices.IndexFunc(st.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodResizePending })
			if i < 0 || st.Conditions[i].Reason != corev1.PodReasonInfeasible {
				t.Errorf("conditions %+v, want PodResizePending Infeasible", st.Conditions)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			rec, v := base, view
			if tc.rec != nil {
				tc.rec(&rec)
			}
			if tc.view != nil {
				tc.view(&v)
			}
			before := rec
			before.waiting = cloneWaiting(rec.waiting)
			st := statusOf(rec, rec.spec, v)
			if !reflect.DeepEqual(rec, before) {
				t.Errorf("statusOf changed the record: %+v, was %+v", rec, before)
			}
			if again := statusOf(rec, rec.spec, v); !reflect.DeepEqual(again, st) {
				t.Errorf("statusOf gave two statuses for one record and view")
			}
			tc.check(t, st)
		})
	}
}

func cloneWaiting(m map[string]podstatus.Waiting) map[string]podstatus.Waiting {
	if m == nil {
		return nil
	}
	out := map[string]podstatus.Waiting{}
	for k, v := range m {
		out[k] = v
	}
	return out
}
