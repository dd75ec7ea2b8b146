package backoff

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// crashLoop is the crash-loop setting.
var crashLoop = Config{Initial: 10 * time.Second, Max: 5 * time.Minute, ResetAfter: 10 * time.Minute}

// step is one line of a scenario: let time pass, then do one thing.
type step struct {
	wait time.Duration
	op   string // "next", "check", "reset", "gc"
	key  string
	// For "next": the delay started. For "check": the time left (0: not in
	// backoff).
	want time.Duration
}

func runSteps(t *testing.T, cfg Config, steps []step) {
	t.Helper()
	clk := clocktesting.NewFakePassiveClock(t0)
	b := New(cfg, clk)
	for i, s := range steps {
		clk.SetTime(clk.Now().Add(s.wait))
		where := fmt.Sprintf("step %d (%s %s at +%v)", i, s.op, s.key, clk.Now().Sub(t0))
		switch s.op {
		case "next":
			if got := b.Next(s.key); got != s.want {
				t.Errorf("%s: Next = %v, want %v", where, got, s.want)
			}
			if got := b.Delay(s.key); got != s.want {
				t.Errorf("%s: Delay = %v, want %v", where, got, s.want)
			}
		case "check":
			in, left := b.InBackoff(s.key)
			if in != (s.want > 0) || left != s.want {
				t.Errorf("%s: InBackoff = %v, %v; want %v, %v", where, in, left, s.want > 0, s.want)
			}
		case "reset":
			b.Reset(s.key)
		case "gc":
			b.GC()
		default:
			t.Fatalf("%s: unknown op", where)
		}
	}
}

func TestBackoff(t *testing.T) {
	s := time.Second
	m := time.Minute
	tests := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{"unknown key is not in backoff", crashLoop, []step{
			{0, "check", "a", 0},
		}},
		{"first failure waits Initial, counted down by the clock", crashLoop, []step{
			{0, "next", "a", 10 * s},
			{0, "check", "a", 10 * s},
			{4 * s, "check", "a", 6 * s},
			{6*s - 1, "check", "a", 1},
			{1, "check", "a", 0},
		}},
		{"doubling up to Max, then staying there", crashLoop, []step{
			{0, "next", "a", 10 * s},
			{10 * s, "next", "a", 20 * s},
			{20 * s, "next", "a", 40 * s},
			{40 * s, "next", "a", 80 * s},
			{80 * s, "next", "a", 160 * s},
			{160 * s, "next", "a", 5 * m},
			{0, "check", "a", 5 * m},
			{5 * m, "next", "a", 5 * m},
		}},
		{"a failure exactly ResetAfter later still doubles", crashLoop, []step{
			{0, "next", "a", 10 * s},
			{10 * m, "next", "a", 20 * s},
		}},
		{"a failure more than ResetAfter later starts over", crashLoop, []step{
			{0, "next", "a", 10 * s},
			{10 * s, "next", "a", 20 * s},
			{20 * s, "next", "a", 40 * s},
			{10*m + 1, "next", "a", 10 * s},
			{10 * s, "next", "a", 20 * s},
		}},
		{"Reset forgets the key", crashLoop, []step{
			{0, "next", "a", 10 * s},
			{0, "next", "a", 20 * s},
			{0, "reset", "a", 0},
			{0, "check", "a", 0},
			{0, "next", "a", 10 * s},
		}},
		{"keys are independent", crashLoop, []step{
			{0, "next", "a", 10 * s},
			{0, "next", "a", 20 * s},
			{5 * s, "next", "b", 10 * s},
			{0, "check", "a", 15 * s},
			{0, "check", "b", 10 * s},
			{0, "reset", "b", 0},
			{0, "check", "a", 15 * s},
		}},
		{"GC keeps keys idle for up to twice ResetAfter", crashLoop, []step{
			{0, "next", "a", 10 * s},
			{0, "next", "a", 20 * s},
			{20 * m, "gc", "", 0},
			{0, "next", "a", 10 * s}, // reset by age, not by GC
		}},
		{"zero config takes the kubelet's defaults", Config{}, []step{
			{0, "next", "a", DefaultInitial},
			{0, "next", "a", 2 * DefaultInitial},
			{DefaultResetAfter + 1, "next", "a", DefaultInitial},
		}},
		{"Max below Initial is raised to Initial", Config{Initial: time.Minute, Max: time.Second}, []step{
			{0, "next", "a", time.Minute},
			{0, "next", "a", time.Minute},
		}},
		{"Max not a power-of-two multiple of Initial", Config{Initial: 3 * s, Max: 10 * s}, []step{
			{0, "next", "a", 3 * s},
			{0, "next", "a", 6 * s},
			{0, "next", "a", 10 * s},
			{0, "next", "a", 10 * s},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, tc.cfg, tc.steps) })
	}
}

func TestGC(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(t0)
	b := New(crashLoop, clk)
	b.Next("old")
	clk.SetTime(t0.Add(time.Minute))
	b.Next("young")

	clk.SetTime(t0.Add(20 * time.Minute))
	b.GC()
	if got := b.Len(); got != 2 {
		t.Fatalf("after 20m: Len = %d, want 2", got)
	}
	clk.SetTime(t0.Add(20*time.Minute + 1))
	b.GC()
	if got := b.Len(); got != 1 {
		t.Fatalf("after 20m+1ns: Len = %d, want 1", got)
	}
	if got := b.Delay("old"); got != 0 {
		t.Errorf("dropped key has Delay %v", got)
	}
	if got := b.Delay("young"); got != crashLoop.Initial {
		t.Errorf("kept key has Delay %v, want %v", got, crashLoop.Initial)
	}
}

// TestNextAt: the delay runs from when the failure happened, not from when
// it was recorded, as the kubelet measures from the container's FinishedAt.
func TestNextAt(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(t0)
	b := New(crashLoop, clk)

	type check struct {
		In   bool
		Left time.Duration
	}
	inBackoff := func() check { in, left := b.InBackoff("a"); return check{in, left} }

	b.NextAt("a", t0.Add(-8*time.Second))
	if diff := cmp.Diff(check{true, 2 * time.Second}, inBackoff()); diff != "" {
		t.Errorf("failure 8s ago (-want +got):\n%s", diff)
	}
	b.NextAt("a", t0.Add(-30*time.Second)) // an older report does not move the last failure back
	if diff := cmp.Diff(check{true, 12 * time.Second}, inBackoff()); diff != "" {
		t.Errorf("older report (-want +got):\n%s", diff)
	}
	b.NextAt("a", t0.Add(-time.Hour))
	if got := b.Delay("a"); got != 40*time.Second {
		t.Errorf("Delay = %v, want 40s", got)
	}
}

// TestConcurrent is for the race detector: every method at once.
func TestConcurrent(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	b := New(crashLoop, clk)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("k%d", g%3)
			for i := range 200 {
				b.Next(key)
				b.InBackoff(key)
				b.Delay(key)
				if i%50 == 0 {
					b.Reset(key)
					b.GC()
					clk.Step(time.Second)
				}
			}
		}()
	}
	wg.Wait()
	for k := range 3 {
		key := fmt.Sprintf("k%d", k)
		if d := b.Delay(key); d < crashLoop.Initial || d > crashLoop.Max {
			t.Errorf("Delay(%s) = %v, outside [Initial, Max]", key, d)
		}
	}
}

func TestInBackoffSinceCountsFromTheLatestFailure(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	clk := clocktesting.NewFakePassiveClock(start)
	b := New(Config{Initial: 10 * time.Second, Max: 40 * time.Second, ResetAfter: time.Minute}, clk)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	steps := []struct {
		name     string
		now      time.Duration // clock, from start
		failedAt time.Duration // the latest failure, from start
		next     bool          // record the failure after checking
		wantIn   bool
		wantLeft time.Duration
	}{
		{"first failure is never held", 0, 0, true, false, 0},
		{"second failure right after", 1 * time.Second, 1 * time.Second, false, true, 10 * time.Second},
		{"second failure, wait half over", 6 * time.Second, 1 * time.Second, false, true, 5 * time.Second},
		{"second failure, wait over", 11 * time.Second, 1 * time.Second, true, false, 0},
		{"third failure doubles", 12 * time.Second, 12 * time.Second, false, true, 20 * time.Second},
		{"third failure, wait over", 32 * time.Second, 12 * time.Second, true, false, 0},
		{"a failure after ResetAfter is not held", 2 * time.Minute, 2 * time.Minute, true, false, 0},
		{"and its delay starts over", 2*time.Minute + time.Second, 2*time.Minute + time.Second, false, true, 10 * time.Second},
	}
	for _, s := range steps {
		clk.SetTime(at(s.now))
		in, left := b.InBackoffSince("k", at(s.failedAt))
		if in != s.wantIn || left != s.wantLeft {
			t.Fatalf("%s: InBackoffSince = %v, %v; want %v, %v", s.name, in, left, s.wantIn, s.wantLeft)
		}
		if s.next {
			b.NextAt("k", at(s.failedAt))
		}
	}
}
