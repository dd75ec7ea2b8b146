package container

import (
	"context"
	"errors"
	"fmt"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/ociruntime"
)

// An operation on a running container's process (an exec, an attach, a log
// reopen, a resource update, a signal) races the container's exit, its stop
// and its removal, and the runtime then fails in words that depend on where
// the race was lost: "write init-p: broken pipe", "procReady not received",
// "failed to open /proc/PID/ns/ipc", "cannot exec in a stopped container".
// Such a failure is answered by what became of the container, looked at
// again after the failure, not by those words: NotFound once it is removed
// (as containerd answers), FailedPrecondition once its init has exited
// (containerd answers Unknown there, an error it leaves unclassified; the
// state is the caller's precondition). A failure of a container that still
// runs keeps its own error (Unknown when nothing classifies it).

// fate is what became of a container after an operation on its process
// failed.
type fate struct {
	// removed: the container is no longer listed, or the runtime no longer
	// knows it (its removal is under way).
	removed bool
	// state is the recorded state of a listed container.
	state State
	// initExited: the runtime's status is stopped, or the init process is
	// gone or exiting, whatever the record says yet.
	initExited bool
}

// ended reports that the container is still there but no longer runs.
func (f fate) ended() bool { return !f.removed && (f.state != Running || f.initExited) }

// edgeError is the error to answer for an operation on the process of
// container id that failed with err, given the container's fate.
func edgeError(id string, err error, f fate) error {
	switch {
	case f.removed:
		return fmt.Errorf("container %s was removed: %v: %w", id, err, errdefs.ErrNotFound)
	case f.state != Running:
		return fmt.Errorf("container %s is %s: %v: %w", id, f.state, err, errdefs.ErrFailedPrecondition)
	case f.initExited:
		return fmt.Errorf("container %s has exited: %v: %w", id, err, errdefs.ErrFailedPrecondition)
	}
	return err
}

// fateOf looks at the container of e again: its record, then the runtime's
// state of it and its init process.
func (m *Manager) fateOf(ctx context.Context, e *entry, rt *ociruntime.Runtime) fate {
	m.mu.RLock()
	f := fate{removed: m.byID[e.c.ID] != e, state: e.c.State}
	m.mu.RUnlock()
	if f.removed || f.state != Running {
		return f
	}
	st, err := rt.State(ctx, e.c.ID)
	switch {
	case errdefs.IsNotFound(err):
		f.removed = true
	case err != nil:
		// Nothing learnt: the failure keeps its own error.
	case st.Status == ociruntime.StatusStopped || ociruntime.Exiting(st.Pid):
		f.initExited = true
	}
	return f
}

// processError is edgeError for a failure err of an operation on e's
// process under ctx. The caller's end (its context, a timeout) is its own
// answer, not the container's.
func (m *Manager) processError(ctx context.Context, e *entry, rt *ociruntime.Runtime, err error) error {
	if err == nil || ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return edgeError(e.c.ID, err, m.fateOf(ctx, e, rt))
}
