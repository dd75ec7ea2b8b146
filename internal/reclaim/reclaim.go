// Package reclaim hands the heap that a burst of removals freed back to
// the kernel.
//
// The Go runtime keeps freed heap pages and returns them only gradually
// (its background scavenger), so after a node tore down hundreds of
// containers the daemon would stay tens of MiB larger than it was, for
// long minutes. Once removals pause, Run has the heap collected and every
// free page returned (FreeHeap), once per burst: the cost, two
// collections of the daemon's heap, is paid when the node has just gone
// quiet.
package reclaim

import (
	"context"
	"errors"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/crib-dev/crib/internal/events"
)

// Bounds of a reclaim.
const (
	// MinRemovals is how many containers and sandboxes must have gone
	// since the last reclaim: one removal frees too little to be worth a
	// collection.
	MinRemovals = 16
	// Quiet is how long removals must have paused.
	Quiet = 250 * time.Millisecond
)

// FreeHeap collects the heap twice and returns every free page to the
// kernel. The first collection moves what sync.Pools cache (gRPC's
// buffers of the lists just served, among others) to their victim caches,
// which the second, debug.FreeOSMemory's, drops.
func FreeHeap() {
	runtime.GC()
	debug.FreeOSMemory()
}

// Run watches b for removals and calls free once at least MinRemovals
// were seen and none came for Quiet. It returns when ctx ends or b is
// closed.
func Run(ctx context.Context, b *events.Broadcaster[events.Event], free func()) {
	removed := 0
	quiet := time.NewTimer(Quiet)
	quiet.Stop()
	sub := b.Subscribe()
	defer func() { sub.Close() }()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-sub.C():
			if !ok {
				if !errors.Is(sub.Err(), events.ErrOverflow) {
					return
				}
				// Too many events to follow: certainly a burst.
				removed = max(removed, MinRemovals)
				sub = b.Subscribe()
			} else if e.Kind == events.Deleted {
				removed++
			} else {
				continue
			}
			if removed >= MinRemovals {
				quiet.Reset(Quiet)
			}
		case <-quiet.C:
			free()
			removed = 0
		}
	}
}
