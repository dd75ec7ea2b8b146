package podworker

import (
	"context"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// recorder is a SyncFunc that blocks each sync until released and counts
// concurrent syncs per pod.
type recorder struct {
	mu      sync.Mutex
	calls   map[string]int
	active  map[string]int
	maxConc int
	release chan struct{}
	started chan string
	requeue time.Duration
}

func newRecorder() *recorder {
	return &recorder{calls: map[string]int{}, active: map[string]int{}, release: make(chan struct{}), started: make(chan string, 100)}
}

func (r *recorder) sync(ctx context.Context, uid string) time.Duration {
	r.mu.Lock()
	r.calls[uid]++
	r.active[uid]++
	if r.active[uid] > r.maxConc {
		r.maxConc = r.active[uid]
	}
	requeue := r.requeue
	r.mu.Unlock()
	r.started <- uid
	<-r.release
	r.mu.Lock()
	r.active[uid]--
	r.mu.Unlock()
	return requeue
}

func (r *recorder) count(uid string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[uid]
}

func waitStarted(t *testing.T, r *recorder, want string) {
	t.Helper()
	select {
	case got := <-r.started:
		if got != want {
			t.Fatalf("sync started for %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no sync started for %q", want)
	}
}

func TestUpdatesDuringSyncAreCoalesced(t *testing.T) {
	r := newRecorder()
	w := New(context.Background(), r.sync, clocktesting.NewFakeClock(time.Now()))
	w.Sync("a")
	waitStarted(t, r, "a")
	// Three requests while the first sync runs make one more sync.
	w.Sync("a")
	w.Sync("a")
	w.Sync("a")
	r.release <- struct{}{}
	waitStarted(t, r, "a")
	r.release <- struct{}{}
	w.Stop()
	if got := r.count("a"); got != 2 {
		t.Errorf("syncs = %d, want 2", got)
	}
	if r.maxConc != 1 {
		t.Errorf("at most %d syncs of one pod ran at once, want 1", r.maxConc)
	}
	if w.Busy("a") {
		t.Error("pod still busy after its syncs ended")
	}
}

func TestPodsSyncIndependently(t *testing.T) {
	r := newRecorder()
	w := New(context.Background(), r.sync, clocktesting.NewFakeClock(time.Now()))
	w.Sync("a")
	waitStarted(t, r, "a")
	// b starts while a is still blocked.
	w.Sync("b")
	waitStarted(t, r, "b")
	r.release <- struct{}{}
	r.release <- struct{}{}
	w.Stop()
	if r.count("a") != 1 || r.count("b") != 1 {
		t.Errorf("syncs a=%d b=%d, want 1 each", r.count("a"), r.count("b"))
	}
}

func TestRequeueAfterDelay(t *testing.T) {
	r := newRecorder()
	r.requeue = 10 * time.Second
	clk := clocktesting.NewFakeClock(time.Now())
	w := New(context.Background(), r.sync, clk)
	w.Sync("a")
	waitStarted(t, r, "a")
	r.release <- struct{}{}
	// Wait until the worker has armed its timer.
	deadline := time.Now().Add(5 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("no requeue timer armed")
		}
		time.Sleep(time.Millisecond)
	}
	clk.Step(9 * time.Second)
	if r.count("a") != 1 {
		t.Fatalf("synced again before the requeue delay")
	}
	clk.Step(time.Second)
	waitStarted(t, r, "a")
	r.mu.Lock()
	r.requeue = 0
	r.mu.Unlock()
	r.release <- struct{}{}
	w.Stop()
	if got := r.count("a"); got != 2 {
		t.Errorf("syncs = %d, want 2", got)
	}
}

func TestStopWaitsAndRefusesNewWork(t *testing.T) {
	r := newRecorder()
	w := New(context.Background(), r.sync, clocktesting.NewFakeClock(time.Now()))
	w.Sync("a")
	waitStarted(t, r, "a")
	done := make(chan struct{})
	go func() { w.Stop(); close(done) }()
	select {
	case <-done:
		t.Fatal("Stop returned while a sync was running")
	case <-time.After(50 * time.Millisecond):
	}
	r.release <- struct{}{}
	<-done
	w.Sync("a")
	if got := r.count("a"); got != 1 {
		t.Errorf("syncs = %d after Stop, want 1", got)
	}
}
