package agent

import (
	"testing"
	"time"

	"github.com/crib-dev/crib/internal/agent/source"
)

func TestRecordPhases(t *testing.T) {
	snap := loadPods(t, twoPods)
	web := podNamed(t, snap, "web")
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

	rec := &podRecord{phase: phaseTerminating}
	if !rec.want(web, t0) {
		t.Fatal("a newly wanted pod: want reported no change")
	}
	if rec.phase != phaseSyncing || rec.spec != web || !rec.firstSeen.Equal(t0) || rec.fresh {
		t.Fatalf("newly wanted: phase %s spec %v firstSeen %v fresh %v", rec.phase, rec.spec != nil, rec.firstSeen, rec.fresh)
	}

	// The same manifest again changes nothing.
	rec.admitted = true
	if rec.want(web.DeepCopy(), t0.Add(time.Minute)) {
		t.Error("the same manifest again: want reported a change")
	}
	if !rec.admitted || !rec.firstSeen.Equal(t0) {
		t.Errorf("the same manifest again: admitted %v firstSeen %v, want kept", rec.admitted, rec.firstSeen)
	}

	// An edit is a new version: admitted afresh, no longer evicted, its
	// status starting over; first seen as before.
	rec.evicted = "too big"
	edited := web.DeepCopy()
	edited.Spec.Containers[0].Command = []string{"sleep", "1"}
	if !rec.want(edited, t0.Add(time.Minute)) {
		t.Fatal("an edit: want reported no change")
	}
	if rec.admitted || rec.evicted != "" || !rec.fresh || !rec.firstSeen.Equal(t0) {
		t.Errorf("after an edit: admitted %v evicted %q fresh %v firstSeen %v", rec.admitted, rec.evicted, rec.fresh, rec.firstSeen)
	}

	// The manifest goes: terminating, with the spec kept for the teardown.
	rec.admitted = true
	rec.unwant()
	if rec.phase != phaseTerminating || rec.wanted() || rec.admitted || rec.spec != edited {
		t.Errorf("unwanted: phase %s admitted %v spec kept %v", rec.phase, rec.admitted, rec.spec == edited)
	}

	rec.fingerprint = "s1"
	rec.terminated()
	if rec.phase != phaseTerminated || rec.spec != nil || !rec.firstSeen.IsZero() || rec.fresh || !rec.listed() {
		t.Errorf("terminated: phase %s spec %v firstSeen %v fresh %v listed %v", rec.phase, rec.spec, rec.firstSeen, rec.fresh, rec.listed())
	}

	// A terminated pod wanted again starts over.
	if !rec.want(web, t0.Add(time.Hour)) || rec.phase != phaseSyncing || !rec.firstSeen.Equal(t0.Add(time.Hour)) {
		t.Errorf("wanted again: phase %s firstSeen %v", rec.phase, rec.firstSeen)
	}
}

// A pod torn down leaves no record behind once the runtime no longer
// lists it: the index holds only what the agent still needs to know.
func TestAgentForgetsTerminatedPods(t *testing.T) {
	f := newRuntimeFakes(t)
	r := f.start(t)
	snap := only(loadPods(t, twoPods), "web")
	web := podNamed(t, snap, "web")
	uid := string(web.UID)
	r.send(t, snap)
	r.waitRunning(t, f, web)

	r.send(t, source.Snapshot{})
	waitFor(t, "web torn down", func() bool {
		sbs, cs, _ := f.podObjects(uid)
		return len(sbs) == 0 && len(cs) == 0
	})
	r.idle(t, web)
	// The next relist finds nothing of the pod and has its worker forget it.
	f.clk.Step(time.Second)
	waitFor(t, "web's record gone", func() bool {
		_, ok := r.a.table.snapshot(uid)
		return !ok
	}, func() string {
		if rec, ok := r.a.table.snapshot(uid); ok {
			return "phase " + rec.phase.String() + ", fingerprint " + rec.fingerprint
		}
		return ""
	})
}
