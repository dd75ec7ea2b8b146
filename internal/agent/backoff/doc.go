// Package backoff keeps the delays between retries of things that keep
// failing: a crash-looping container (CrashLoopBackOff) and an image that
// cannot be pulled (ImagePullBackOff). It is the kubelet's per-key
// exponential backoff: the first failure waits Initial, each further one
// twice as long up to Max, and a failure that comes more than ResetAfter
// after the previous one starts again at Initial (the thing ran, or was
// left alone, long enough to count as healthy).
//
// It owns only the arithmetic and the table of keys; it never sleeps or
// schedules anything: callers ask InBackoff when they are about to retry
// and record each failure with Next. Time comes from an injected clock.
// Keys are strings the caller builds (the kubelet uses pod name, namespace,
// UID, container name and spec hash, so that a changed spec starts fresh).
//
// Invariants: a key's delay is always within [Initial, Max]; a Backoff is
// safe for concurrent use.
package backoff
