package container

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/ociruntime"
)

// Live is what a checkpoint of a running container reads of it.
type Live struct {
	Container Container
	// Runtime is the container's OCI runtime.
	Runtime *ociruntime.Runtime
	// Spec is the container's OCI spec (the bundle's config.json).
	Spec string
	// WritableLayer is the overlay upper dir of its rootfs; LowerDirs
	// are the image's layers under it, top first.
	WritableLayer string
	LowerDirs     []string
}

// WhileRunning calls fn with the running container id (or a unique
// prefix) while holding the lock that serialises its Start, Stop, Remove
// and updates, so that none of them changes it until fn returns (its
// process may still exit by itself). A container that is not running is
// errdefs.ErrFailedPrecondition; an unknown one errdefs.ErrNotFound.
func (m *Manager) WhileRunning(id string, fn func(Live) error) error {
	e, c, err := m.locked(id)
	if err != nil {
		return err
	}
	defer e.op.Unlock()
	if c.State != Running {
		return fmt.Errorf("container %s is %s, not running: %w", c.ID, c.State, errdefs.ErrFailedPrecondition)
	}
	rt, err := m.runtime(c.RuntimeHandler)
	if err != nil {
		return err
	}
	lower, err := m.images.LowerDirs(image.Image{ID: c.ImageID, ChainIDs: c.ChainIDs})
	if err != nil {
		return fmt.Errorf("container %s: %w", c.ID, err)
	}
	b := m.bundle(c.ID)
	return fn(Live{
		Container:     c,
		Runtime:       rt,
		Spec:          filepath.Join(b, "config.json"),
		WritableLayer: filepath.Join(b, "fs"),
		LowerDirs:     lower,
	})
}

// Thaw resumes container id if its runtime has it paused: a pod checkpoint
// the daemon died in left it so. Not found is no error: it is gone.
func (m *Manager) Thaw(ctx context.Context, id string) error {
	c, err := m.Get(id)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	rt, err := m.runtime(c.RuntimeHandler)
	if err != nil {
		return err
	}
	st, err := rt.State(ctx, c.ID)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Status != ociruntime.StatusPaused {
		return nil
	}
	return rt.Resume(ctx, c.ID)
}
