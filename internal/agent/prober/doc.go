// Package prober runs a pod's startup, liveness and readiness probes and its
// postStart and preStop lifecycle hooks, the way the kubelet's prober, prober
// manager and lifecycle handler runner do.
//
// It owns one worker goroutine per (running container, probe kind) and the
// cached results those workers produce; the agent reads the results (Result,
// Ready, Started) when it plans and when it computes pod status, and learns of
// changes through Config.OnChange. It does not kill containers, restart them or
// write status: a liveness or startup Failure is a verdict the agent acts on.
//
// Invariants: a worker belongs to exactly one container ID; when the container
// restarts (new ID) or disappears, Sync stops the worker and drops its results,
// and a stopped worker never writes a result again. Liveness and readiness
// probes do not run before the startup probe succeeded. After a liveness or
// startup Failure a worker stops probing until the container is replaced. Every
// wait happens on the injected clock; network and exec timeouts are real time.
package prober
