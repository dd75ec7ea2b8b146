package image

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// heldPull is a pullFunc that reports what the test sends it and returns
// what the test tells it to.
type heldPull struct {
	progress chan func(Progress) // the flight's report function, once started
	result   chan error
}

func newHeldPull() *heldPull {
	return &heldPull{progress: make(chan func(Progress), 1), result: make(chan error)}
}

func (h *heldPull) fn(_ context.Context, progress func(Progress)) (Image, error) {
	h.progress <- progress
	if err := <-h.result; err != nil {
		return Image{}, err
	}
	return Image{ID: "sha256:done"}, nil
}

func TestFlightRecordsProgressUntilThePullEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{name: "succeeded"},
		{name: "failed", err: errors.New("registry gone")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fs flights
			h := newHeldPull()
			results := make(chan error, 2)
			// Two callers share the pull; only one asks for progress.
			var mu sync.Mutex
			seen := 0
			go func() {
				_, err := fs.do(context.Background(), "k", "example.com/app:1", func(Progress) { mu.Lock(); seen++; mu.Unlock() }, h.fn)
				results <- err
			}()
			report := <-h.progress
			go func() {
				_, err := fs.do(context.Background(), "k", "example.com/app:1", nil, h.fn)
				results <- err
			}()
			waitFor(t, "the second caller to join", func() bool { return fs.waiting("k") == 2 })

			// Layers as the pull announces them, then concurrent reads of
			// each layer, every goroutine its own layer.
			const layers, reads = 4, 200
			for l := range layers {
				report(Progress{Layer: fmt.Sprintf("sha256:%d", l), Total: reads * 10})
			}
			var wg sync.WaitGroup
			for l := range layers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := 1; n <= reads-l; n++ {
						report(Progress{Layer: fmt.Sprintf("sha256:%d", l), Done: int64(n * 10), Total: reads * 10})
					}
				}()
			}
			// Snapshots taken meanwhile never see a layer go backwards.
			stop := make(chan struct{})
			snapErr := make(chan error, 1)
			go func() {
				last := map[string]int64{}
				for {
					select {
					case <-stop:
						snapErr <- nil
						return
					default:
					}
					for _, p := range fs.snapshot() {
						for _, l := range p.Layers {
							if l.Done < last[l.Layer] {
								snapErr <- fmt.Errorf("layer %s went from %d to %d", l.Layer, last[l.Layer], l.Done)
								return
							}
							last[l.Layer] = l.Done
						}
					}
				}
			}()
			wg.Wait()
			close(stop)
			if err := <-snapErr; err != nil {
				t.Error(err)
			}

			got := fs.snapshot()
			if len(got) != 1 {
				t.Fatalf("pulls in flight = %+v, want one", got)
			}
			if got[0].Ref != "example.com/app:1" || got[0].Waiters != 2 || got[0].Started.IsZero() {
				t.Errorf("pull = %+v, want example.com/app:1 with 2 waiters and a start time", got[0])
			}
			var want []Progress
			var wantDone int64
			for l := range layers {
				want = append(want, Progress{Layer: fmt.Sprintf("sha256:%d", l), Done: int64((reads - l) * 10), Total: reads * 10})
				wantDone += int64((reads - l) * 10)
			}
			if diff := cmp.Diff(want, got[0].Layers); diff != "" {
				t.Errorf("layers (-want +got):\n%s", diff)
			}
			if done, total := got[0].Bytes(); done != wantDone || total != layers*reads*10 {
				t.Errorf("Bytes() = %d, %d; want %d, %d", done, total, wantDone, layers*reads*10)
			}
			mu.Lock()
			if want := layers + layers*reads - (layers*(layers-1))/2; seen != want {
				t.Errorf("the subscriber saw %d reports, want %d", seen, want)
			}
			mu.Unlock()

			h.result <- tc.err
			for range 2 {
				if err := <-results; !errors.Is(err, tc.err) {
					t.Errorf("pull returned %v, want %v", err, tc.err)
				}
			}
			if got := fs.snapshot(); len(got) != 0 {
				t.Errorf("pulls in flight after the pull ended: %+v", got)
			}
		})
	}
}

func TestFlightLeavesTheListWhenEveryCallerGaveUp(t *testing.T) {
	var fs flights
	h := newHeldPull()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := fs.do(ctx, "k", "example.com/app:1", nil, h.fn)
		done <- err
	}()
	report := <-h.progress
	report(Progress{Layer: "sha256:a", Done: 1, Total: 2})
	if got := fs.snapshot(); len(got) != 1 || len(got[0].Layers) != 1 {
		t.Fatalf("pulls in flight = %+v, want one with one layer", got)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("pull returned %v, want context.Canceled", err)
	}
	// The abandoned pull still runs until it sees its cancellation, but
	// it is no longer in flight for anyone.
	if got := fs.snapshot(); len(got) != 0 {
		t.Errorf("pulls in flight after the last caller left: %+v", got)
	}
	h.result <- context.Canceled
}

// A subscriber that does not keep up (an API client reading slowly) holds
// up neither the record nor the list of pulls.
func TestFlightSlowSubscriberDoesNotHoldUpSnapshots(t *testing.T) {
	var fs flights
	h := newHeldPull()
	unblock := make(chan struct{})
	defer close(unblock)
	inSubscriber := make(chan struct{}, 1)
	go func() {
		_, _ = fs.do(context.Background(), "k", "example.com/app:1", func(Progress) {
			inSubscriber <- struct{}{}
			<-unblock
		}, h.fn)
	}()
	report := <-h.progress
	go report(Progress{Layer: "sha256:a", Done: 5, Total: 10})
	<-inSubscriber
	got := make(chan []PullStatus, 1)
	go func() { got <- fs.snapshot() }()
	select {
	case ps := <-got:
		if len(ps) != 1 || len(ps[0].Layers) != 1 || ps[0].Layers[0].Done != 5 {
			t.Errorf("pulls in flight = %+v, want the layer at 5 bytes", ps)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a snapshot waits for a blocked subscriber")
	}
	go func() { h.result <- nil }()
}
