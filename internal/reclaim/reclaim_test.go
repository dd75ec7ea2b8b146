package reclaim

import (
	"context"
	"runtime"
	"testing"

	"github.com/crib-dev/crib/internal/lifecycle"
)

// TestReclaimsAfterABurstOfRemovals: other events do not count; once
// MinRemovals containers and sandboxes went and removals paused, free runs,
// once; Run returns when its context ends.
func TestReclaimsAfterABurstOfRemovals(t *testing.T) {
	b := lifecycle.NewBroadcaster[lifecycle.Event](0)
	defer b.Close()
	freed := make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		Run(ctx, b, nil, func() { freed <- struct{}{} })
	}()
	for b.Subscribers() == 0 {
		// Run subscribes before it reads; events published earlier
		// are not its to count.
		runtime.Gosched()
	}
	for i := range 3 * MinRemovals {
		kind := lifecycle.Started
		if i%3 == 0 {
			kind = lifecycle.Deleted
		}
		b.Publish(lifecycle.Event{Kind: kind, ID: "c", SandboxID: "s"})
	}
	<-freed
	cancel()
	<-returned
	if n := len(freed); n != 0 {
		t.Errorf("free ran %d more times after one burst", n)
	}
}

// TestReclaimsAfterAPull: one pull that ended is worth a reclaim, once,
// however many times it was told.
func TestReclaimsAfterAPull(t *testing.T) {
	b := lifecycle.NewBroadcaster[lifecycle.Event](0)
	defer b.Close()
	freed := make(chan struct{}, 10)
	pulls := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		Run(ctx, b, pulls, func() { freed <- struct{}{} })
	}()
	pulls <- struct{}{}
	pulls <- struct{}{}
	<-freed
	cancel()
	<-returned
	if n := len(freed); n != 0 {
		t.Errorf("free ran %d more times after two pulls in a row", n)
	}
}
