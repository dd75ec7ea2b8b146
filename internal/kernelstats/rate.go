package kernelstats

import (
	"sync"
	"time"
)

// CPUPoint is a cumulative CPU counter at one time.
type CPUPoint struct {
	Time       time.Time
	UsageNanos uint64
}

// NanoCores is the CPU rate between prev and cur in billionths of a core
// (1e9 is one core busy all the time). It is false when there is no rate
// to give: prev is unset, time did not advance, or the counter went back
// (the cgroup was made anew).
func NanoCores(prev, cur CPUPoint) (uint64, bool) {
	if prev.Time.IsZero() || !cur.Time.After(prev.Time) || cur.UsageNanos < prev.UsageNanos {
		return 0, false
	}
	elapsed := cur.Time.Sub(prev.Time)
	used := float64(cur.UsageNanos - prev.UsageNanos)
	return uint64(used / float64(elapsed) * float64(time.Second)), true
}

// Rates remembers the last CPU point of each cgroup owner, to turn the
// cumulative counter into a rate between two readings. The zero value is
// ready; it is safe for concurrent use.
type Rates struct {
	mu   sync.Mutex
	last map[string]CPUPoint
}

// Rate returns the CPU rate of key since its previous point (see
// NanoCores) and records cur as the next previous one.
func (r *Rates) Rate(key string, cur CPUPoint) (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[string]CPUPoint{}
	}
	prev := r.last[key]
	r.last[key] = cur
	return NanoCores(prev, cur)
}

// Keep forgets the points of every key for which live is false, so that
// removed containers and pods do not accumulate.
func (r *Rates) Keep(live func(key string) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.last {
		if !live(k) {
			delete(r.last, k)
		}
	}
}

// Len is the number of keys with a point.
func (r *Rates) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.last)
}
