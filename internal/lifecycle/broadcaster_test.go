package lifecycle

import (
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// drain reads what s delivers until its channel is closed.
func drain[T any](s *Subscription[T]) []T {
	var out []T
	for v := range s.C() {
		out = append(out, v)
	}
	return out
}

func TestFanOutInOrder(t *testing.T) {
	for _, tt := range []struct {
		name        string
		subscribers int
		values      []int
	}{
		{"one subscriber", 1, []int{1, 2, 3}},
		{"three subscribers", 3, []int{5, 4, 3, 2, 1}},
		{"nothing published", 2, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBroadcaster[int](16)
			subs := make([]*Subscription[int], tt.subscribers)
			for i := range subs {
				subs[i] = b.Subscribe()
			}
			for _, v := range tt.values {
				b.Publish(v)
			}
			b.Close()
			for i, s := range subs {
				if diff := cmp.Diff(tt.values, drain(s)); diff != "" {
					t.Errorf("subscriber %d got (-want +got):\n%s", i, diff)
				}
				if !errors.Is(s.Err(), ErrClosed) {
					t.Errorf("subscriber %d: Err() = %v, want ErrClosed", i, s.Err())
				}
			}
		})
	}
}

func TestValuesBeforeSubscribeAreNotKept(t *testing.T) {
	b := NewBroadcaster[string](4)
	b.Publish("early")
	s := b.Subscribe()
	b.Publish("late")
	s.Close()
	if diff := cmp.Diff([]string{"late"}, drain(s)); diff != "" {
		t.Errorf("got (-want +got):\n%s", diff)
	}
}

func TestSlowSubscriberIsDroppedOthersContinue(t *testing.T) {
	b := NewBroadcaster[int](2)
	slow := b.Subscribe()
	fast := b.Subscribe()
	var got []int
	for v := 1; v <= 5; v++ {
		b.Publish(v) // never blocks, even though slow never reads
		got = append(got, <-fast.C())
	}
	if diff := cmp.Diff([]int{1, 2, 3, 4, 5}, got); diff != "" {
		t.Errorf("fast subscriber got (-want +got):\n%s", diff)
	}
	// slow keeps what fitted its buffer, then its channel is closed.
	if diff := cmp.Diff([]int{1, 2}, drain(slow)); diff != "" {
		t.Errorf("slow subscriber got (-want +got):\n%s", diff)
	}
	if !errors.Is(slow.Err(), ErrOverflow) {
		t.Errorf("slow Err() = %v, want ErrOverflow", slow.Err())
	}
	if fast.Err() != nil {
		t.Errorf("fast Err() = %v, want nil", fast.Err())
	}
	if n := b.Subscribers(); n != 1 {
		t.Errorf("Subscribers() = %d, want 1", n)
	}
}

func TestUnsubscribe(t *testing.T) {
	b := NewBroadcaster[int](4)
	s := b.Subscribe()
	other := b.Subscribe()
	b.Publish(1)
	s.Close()
	s.Close() // twice is fine
	b.Publish(2)
	if diff := cmp.Diff([]int{1}, drain(s)); diff != "" {
		t.Errorf("closed subscriber got (-want +got):\n%s", diff)
	}
	if s.Err() != nil {
		t.Errorf("Err() after Close = %v, want nil", s.Err())
	}
	if n := b.Subscribers(); n != 1 {
		t.Errorf("Subscribers() = %d, want 1", n)
	}
	other.Close()
	if diff := cmp.Diff([]int{1, 2}, drain(other)); diff != "" {
		t.Errorf("other subscriber got (-want +got):\n%s", diff)
	}
}

func TestSubscribeAfterClose(t *testing.T) {
	b := NewBroadcaster[int](0)
	b.Close()
	b.Close()
	s := b.Subscribe()
	b.Publish(1)
	if got := drain(s); len(got) != 0 {
		t.Errorf("got %v from a closed broadcaster", got)
	}
	if !errors.Is(s.Err(), ErrClosed) {
		t.Errorf("Err() = %v, want ErrClosed", s.Err())
	}
	s.Close()
}

// TestConcurrentUseLeavesNoGoroutines publishes from several goroutines
// while subscribers come and go, then checks that every goroutine of the
// test has ended: the broadcaster holds none of its own, and no reader is
// left blocked on a channel that is never closed.
func TestConcurrentUseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	b := NewBroadcaster[int](8)
	var wg sync.WaitGroup
	for p := 0; p < 4; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				b.Publish(i)
			}
		}()
	}
	for r := 0; r < 8; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				s := b.Subscribe()
				// Read a little, sometimes fall behind, then leave.
				select {
				case <-s.C():
				default:
				}
				s.Close()
				drain(s)
			}
		}()
	}
	stay := b.Subscribe()
	done := make(chan []int)
	go func() { done <- drain(stay) }()
	wg.Wait()
	b.Close()
	<-done
	if n := b.Subscribers(); n != 0 {
		t.Errorf("Subscribers() = %d after Close, want 0", n)
	}
	// Goroutines that returned may take a moment to be reaped by the
	// runtime; this waits for that, it does not time the code under test.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the test, %d before", n, before)
	}
}

func TestEventIsSandbox(t *testing.T) {
	for _, tt := range []struct {
		ev   Event
		want bool
	}{
		{Event{Kind: Created, ID: "s1", SandboxID: "s1"}, true},
		{Event{Kind: Created, ID: "c1", SandboxID: "s1"}, false},
	} {
		if got := tt.ev.IsSandbox(); got != tt.want {
			t.Errorf("%+v.IsSandbox() = %v, want %v", tt.ev, got, tt.want)
		}
	}
	if got := Deleted.String(); got != "deleted" {
		t.Errorf("Deleted.String() = %q", got)
	}
}
