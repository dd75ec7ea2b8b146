package daemon

import (
	"context"
	"time"
)

// restore adopts what the previous daemon left: sandboxes first, then the
// containers in them (live ones through their monitors), then removes what
// interrupted pulls left in the image store. It runs before the socket is
// served, so no call sees a half-restored runtime.
func (d *Daemon) restore(ctx context.Context) error {
	if err := d.sandboxes.Restore(ctx); err != nil {
		return err
	}
	if err := d.containers.Restore(ctx); err != nil {
		return err
	}
	// Checkpoints the last daemon died in: their work dirs and temporary
	// archives, once the runtime it left dumping (if any) is done.
	d.checkpoints.Recover(time.Minute)
	// Every container now retains its layers, so what no image references
	// is garbage: the finished blobs and snapshots of a pull that a crash
	// interrupted (the partial ones went when the store opened).
	if err := d.images.Prune(ctx); err != nil {
		d.log.Warn("remove leftovers of interrupted pulls", "err", err)
	}
	return nil
}
