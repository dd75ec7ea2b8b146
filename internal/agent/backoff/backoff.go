package backoff

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Defaults are the kubelet's crash-loop values, used for zero fields.
const (
	DefaultInitial    = 10 * time.Second
	DefaultMax        = 5 * time.Minute
	DefaultResetAfter = 10 * time.Minute
)

// Config sets the delays. A zero field takes its Default; a Max below
// Initial is raised to Initial.
type Config struct {
	// Initial is the delay after the first failure.
	Initial time.Duration
	// Max caps the doubling.
	Max time.Duration
	// ResetAfter: a failure recorded more than ResetAfter after the
	// previous one of the same key starts over at Initial. Keys idle for
	// twice as long are dropped by GC.
	ResetAfter time.Duration
}

// Backoff tracks one delay per key.
type Backoff struct {
	cfg   Config
	clk   clock.PassiveClock
	mu    sync.Mutex
	items map[string]entry
}

// entry is one key's state: the last failure and the delay it started.
type entry struct {
	last  time.Time
	delay time.Duration
}

// New returns an empty Backoff reading time from clk.
func New(cfg Config, clk clock.PassiveClock) *Backoff {
	if cfg.Initial <= 0 {
		cfg.Initial = DefaultInitial
	}
	if cfg.Max <= 0 {
		cfg.Max = DefaultMax
	}
	if cfg.Max < cfg.Initial {
		cfg.Max = cfg.Initial
	}
	if cfg.ResetAfter <= 0 {
		cfg.ResetAfter = DefaultResetAfter
	}
	return &Backoff{cfg: cfg, clk: clk, items: map[string]entry{}}
}

// Next records a failure of key now and returns the delay it starts.
func (b *Backoff) Next(key string) time.Duration {
	return b.NextAt(key, b.clk.Now())
}

// NextAt records a failure of key at time at, for callers that know when
// the failure happened (a container's FinishedAt, which the kubelet
// measures the crash-loop delay from), and returns the delay it starts:
// Initial for a new key or one whose previous failure is more than
// ResetAfter before at, else the previous delay doubled, at most Max.
func (b *Backoff) NextAt(key string, at time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.items[key]
	switch {
	case !ok || at.Sub(e.last) > b.cfg.ResetAfter:
		e.delay = b.cfg.Initial
	case e.delay > b.cfg.Max/2:
		e.delay = b.cfg.Max
	default:
		e.delay *= 2
	}
	if at.After(e.last) {
		e.last = at
	}
	b.items[key] = e
	return e.delay
}

// InBackoff reports whether key must still wait (now is before its last
// failure plus its delay) and how long is left.
func (b *Backoff) InBackoff(key string) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.items[key]
	if !ok {
		return false, 0
	}
	left := e.last.Add(e.delay).Sub(b.clk.Now())
	if left <= 0 {
		return false, 0
	}
	return true, left
}

// Delay returns the delay key's last failure started, or 0 for an unknown
// key: the "back-off 40s" of a CrashLoopBackOff message.
func (b *Backoff) Delay(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.items[key].delay
}

// Reset forgets key: its next failure waits Initial again.
func (b *Backoff) Reset(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.items, key)
}

// GC drops keys whose last failure is more than twice ResetAfter ago; their
// next failure would start at Initial anyway.
func (b *Backoff) GC() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clk.Now()
	for k, e := range b.items {
		if now.Sub(e.last) > 2*b.cfg.ResetAfter {
			delete(b.items, k)
		}
	}
}

// Len returns the number of keys tracked.
func (b *Backoff) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.items)
}

// InBackoffSince reports whether something that failed again at at must
// still wait, and for how long: the wait is the key's current delay counted
// from at, the way the kubelet counts a crash loop from the container's
// exit. A failure more than ResetAfter after the recorded one is not held
// back, because the delay starts over with it.
func (b *Backoff) InBackoffSince(key string, at time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.items[key]
	if !ok || at.Sub(e.last) > b.cfg.ResetAfter {
		return false, 0
	}
	left := at.Add(e.delay).Sub(b.clk.Now())
	if left <= 0 {
		return false, 0
	}
	return true, left
}
