package agent

import (
	"context"

	"github.com/crib-dev/crib/internal/agent/userns"
	"github.com/crib-dev/crib/internal/agent/volume"
)

// podDirs is the volume manager with what else a pod's directory holds: the
// pod's block of host ids, whose mapping file goes with the directory, is
// freed once the directory is removed, and only then.
type podDirs struct {
	*volume.Manager
	userns *userns.Manager
}

// Remove removes the pod's directory and then frees its block.
func (d podDirs) Remove(ctx context.Context, uid string) error {
	if err := d.Manager.Remove(ctx, uid); err != nil {
		return err
	}
	d.userns.Release(uid)
	return nil
}
