// Package cri is crib's gRPC edge: the CRI v1 RuntimeService and
// ImageService, one file per RPC.
//
// It converts CRI messages to calls on the sandbox, container and image
// managers and the stats service (statsservice), and their results back to CRI messages,
// and nothing else: it does no I/O (the stats RPCs' figures come from
// package statsservice), and validation of a request's content lives with the
// manager that owns the object. GetContainerEvents (container_events.go) turns the managers'
// neutral lifecycle events (package lifecycle) into CRI events, each with the
// pod's sandbox status and its containers' statuses. instrument.go logs
// every RPC once, streams included, and is the one place where error
// classes (github.com/containerd/errdefs) become gRPC codes; a panic in a
// handler becomes an Internal error, never a dead daemon.
package cri
