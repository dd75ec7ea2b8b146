// Package container owns the lifecycle of CRI containers: their records,
// overlay rootfs, OCI bundle, monitor process and exit status.
//
// A container is created under a monitor (package monitor) that runs the
// OCI runtime's create, holds the container's stdio, writes its CRI log and
// records its exit; the daemon only watches the monitor. Status and List
// answer from memory and never ask runc or a monitor, so a hung container
// cannot slow them.
//
// When Config.Events is set, every lifecycle transition is published as a
// neutral lifecycle.Event: created by Create, started by Start, stopped when
// the exit is recorded (by the watcher after the monitor reports it, even
// with no RPC running, by a failed Start, or by Stop of an unknown
// container), deleted by Remove. Becoming Unknown publishes nothing.
// Events are published while the index lock is held, so they leave in the
// order of the transitions.
//
// An operation on a running container's process that fails because the
// container exited, was stopped or was removed meanwhile is answered by
// the container's fate, looked at again after the failure (edge.go):
// errdefs.ErrNotFound once it is removed, errdefs.ErrFailedPrecondition
// once its init exited; the runtime's message stays in the error's text.
//
// Invariants: a record reaches the in-memory index only after it is on disk;
// a record found on restore in state Creating is a creation the daemon died
// in and is rolled back; a container whose monitor and exit record are both
// gone after a restart is Unknown, and can still be stopped and removed.
package container
