package daemon

import (
	"context"
	"time"

	"github.com/crib-dev/crib/internal/container"
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
	// Pods whose namespace holder ended while no daemon ran.
	d.sandboxes.Rehold(ctx, d.runningPids)
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

// runningPids are the host pids of the sandbox's running containers.
func (d *Daemon) runningPids(sandboxID string) []int {
	var pids []int
	for _, c := range d.containers.InSandbox(sandboxID) {
		if c.State == container.Running && c.Pid > 0 {
			pids = append(pids, c.Pid)
		}
	}
	return pids
}

// watchHolder mends the pods' namespaces each time a namespace holder
// ends under the running daemon (see sandbox.Manager.Rehold), until ctx
// is done.
func (d *Daemon) watchHolder(ctx context.Context) {
	if d.nshold == nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.nshold.Lost():
			d.sandboxes.Rehold(ctx, d.runningPids)
		}
	}
}
