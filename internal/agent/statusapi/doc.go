// Package statusapi is the node agent's read-only API to the outside world:
// the latest pod and status per UID (Store), a bounded list of events
// (Events), Prometheus metrics written by hand (Metrics), the HTTP server
// that serves them (Handler, Serve: /pods, /healthz, /metrics, /events,
// /manifests), a client for it (Client) and the tables the CLI prints
// (WritePods, WriteContainers).
//
// It does not decide anything and computes no status (package podstatus
// does): it never talks to the runtime, never starts or kills containers
// and never reads manifests. Store, Events and Metrics are safe for
// concurrent use; every value they return is a copy the caller may change.
package statusapi
