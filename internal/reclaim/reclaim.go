// Package reclaim hands the heap that a burst of removals, or a pull,
// freed back to the kernel.
//
// The Go runtime keeps freed heap pages and returns them only gradually
// (its background scavenger), so after a node tore down hundreds of
// containers the daemon would stay tens of MiB larger than it was, for
// long minutes, and a single image pull's buffers (HTTP, decompression,
// tar) left it 3 MiB larger for good. Once removals and pulls pause, Run
// has the heap collected and every free page returned (FreeHeap), once
// per burst: the cost, two collections of the daemon's heap, is paid when
// the node has just gone quiet.
package reclaim

import (
	"context"
	"errors"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/crib-dev/crib/internal/lifecycle"
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

// Run watches b for removals and pullsEnded for pulls that ended, and
// calls free once at least MinRemovals removals or one pull were seen and
// neither came for Quiet. It returns when ctx ends or b is closed.
func Run(ctx context.Context, b *lifecycle.Broadcaster[lifecycle.Event], pullsEnded <-chan struct{}, free func()) {
	// owed is what was freed since the last reclaim, in removals; a pull
	// frees as much as a burst.
	owed := 0
	quiet := time.NewTimer(Quiet)
	quiet.Stop()
	sub := b.Subscribe()
	defer func() { sub.Close() }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-pullsEnded:
			owed = max(owed, MinRemovals)
		case e, ok := <-sub.C():
			if !ok {
				if !errors.Is(sub.Err(), lifecycle.ErrOverflow) {
					return
				}
				// Too many events to follow: certainly a burst.
				owed = max(owed, MinRemovals)
				sub = b.Subscribe()
			} else if e.Kind == lifecycle.Deleted {
				owed++
			} else {
				continue
			}
		case <-quiet.C:
			free()
			owed = 0
			continue
		}
		if owed >= MinRemovals {
			quiet.Reset(Quiet)
		}
	}
}
