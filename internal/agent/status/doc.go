// Package status owns what the node agent tells the outside world about its
// pods: the PodStatus computed from the runtime's view (Compute, the
// kubelet's phase, conditions and container statuses rewritten for crib), the
// latest pod and status per UID (Store), a bounded list of events (Events),
// Prometheus metrics written by hand (Metrics), the read-only HTTP API that
// serves them (Handler, Serve), a client for it (Client) and the tables the
// CLI prints (WritePods, WriteContainers).
//
// It does not decide anything: it never talks to the runtime, never starts or
// kills containers and never reads manifests. Compute is pure: the same Facts
// give the same PodStatus. Container IDs in statuses use the scheme
// "crib://<runtime id>" whatever runtime the agent drives, because the agent
// only knows the ID the CRI returned, not which runtime is behind the socket.
// Store, Events and Metrics are safe for concurrent use; every value they
// return is a copy the caller may change.
package status
