package podworker

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// SyncFunc does one pod's work. It returns how long to wait before the
// pod is synced again on its own (0: only when asked).
type SyncFunc func(ctx context.Context, uid string) (requeue time.Duration)

// Workers runs SyncFunc for pods, one goroutine per busy pod.
type Workers struct {
	sync  SyncFunc
	clock clock.WithDelayedExecution
	ctx   context.Context

	mu      sync.Mutex
	pods    map[string]*worker
	wg      sync.WaitGroup
	stopped bool
}

type worker struct {
	running bool
	pending bool
	timer   clock.Timer
}

// New returns workers that run fn until ctx is done.
func New(ctx context.Context, fn SyncFunc, clk clock.WithDelayedExecution) *Workers {
	return &Workers{sync: fn, clock: clk, ctx: ctx, pods: map[string]*worker{}}
}

// Sync asks for a sync of the pod. If one is running, another follows it;
// requests that arrive meanwhile are coalesced into that one.
func (w *Workers) Sync(uid string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	p := w.pods[uid]
	if p == nil {
		p = &worker{}
		w.pods[uid] = p
	}
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	if p.running {
		p.pending = true
		return
	}
	p.running = true
	w.wg.Add(1)
	go w.run(uid, p)
}

func (w *Workers) run(uid string, p *worker) {
	defer w.wg.Done()
	for {
		requeue := time.Duration(0)
		if w.ctx.Err() == nil {
			requeue = w.sync(w.ctx, uid)
		}
		w.mu.Lock()
		if p.pending && !w.stopped {
			p.pending = false
			w.mu.Unlock()
			continue
		}
		p.running = false
		if requeue > 0 && !w.stopped {
			// The timer's callback must not call back into the clock
			// (Sync stops the timer), so it hands over to a goroutine.
			p.timer = w.clock.AfterFunc(requeue, func() { go w.Sync(uid) })
		} else if p.timer == nil {
			delete(w.pods, uid)
		}
		w.mu.Unlock()
		return
	}
}

// Busy reports whether the pod has a sync running or pending.
func (w *Workers) Busy(uid string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.pods[uid]
	return p != nil && (p.running || p.pending)
}

// Stop cancels every pending retry and waits for running syncs to end.
// The caller cancels the context given to New first if they should hurry.
func (w *Workers) Stop() {
	w.mu.Lock()
	w.stopped = true
	for _, p := range w.pods {
		if p.timer != nil {
			p.timer.Stop()
		}
	}
	w.mu.Unlock()
	w.wg.Wait()
}
