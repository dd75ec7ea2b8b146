// Package runtimemetrics owns the runtime's Prometheus collectors, in a registry of
// their own (never the global default), and serves them over HTTP.
//
// The parts it measures do not import it: each declares the narrow
// recorder it needs (cri's RPC observer, image's pull recorder, network's
// CNI observer, sandbox's and container's pod-start tracer) and the daemon
// hands them a *Metrics. Every method accepts a nil *Metrics and then does
// nothing, so tests and callers may run without metrics.
//
// Counts of things by state (containers, sandboxes, monitors) are not kept
// here: a collector reads them from their owners at scrape time.
//
// A pod start is also traced: the phases of one pod's start, from
// RunPodSandbox to its first container started, are logged at debug level
// as one line when the start ends.
package runtimemetrics
