// Package pause is the init process of a pod whose containers share one PID
// namespace: crib's built-in stand-in for the pause image.
//
// It holds the namespace open and reaps the zombies that orphaned container
// processes leave when they are reparented to it. It exits on SIGTERM or
// SIGINT, which, as PID 1, kills every process left in the namespace.
// Start launches it from the daemon, detached in its own session so that it
// outlives a daemon restart.
package pause
