// Package ociruntime drives an OCI runtime (runc, or crun, which shares its
// command line) as an external binary: start, state, kill, delete, update,
// exec, list and version, plus the argument vector for create.
//
// It owns nothing but the conversation with the runtime binary: it does not
// create containers itself (the monitor runs `create`, so that the
// container's stdio belongs to the monitor and not to the daemon), it knows
// no CRI types, and it keeps no state between calls beyond the Runtime
// configuration.
//
// Exec of a process that leaves a background child holding its output would
// keep a foreground `runc exec` waiting for that child. Runtime.ExecShim
// avoids it: the exec runs detached under a small subreaper process
// (ExecShimMain, reached through the monitor binary) that reports the exit
// status as soon as the exec'd process ends.
//
// Invariants: every error returned carries the runtime's own message (taken
// from its JSON log, or from its standard error) and is classified with
// github.com/containerd/errdefs where the class is known: an unknown
// container is errdefs.ErrNotFound, a duplicate id errdefs.ErrAlreadyExists.
// Delete is idempotent. Exec never outlives its context: on cancellation the
// exec'd process and its process group are killed before Exec returns.
package ociruntime
