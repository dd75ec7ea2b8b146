// Package cri is crib's gRPC edge: the CRI v1 RuntimeService and
// ImageService, one file per RPC.
//
// It converts CRI messages to calls on the sandbox, container and image
// managers and their results back to CRI messages, and nothing else:
// validation of a request's content lives with the manager that owns the
// object. instrument.go logs every RPC once and is the one place where
// error classes (github.com/containerd/errdefs) become gRPC codes; a panic
// in a handler becomes an Internal error, never a dead daemon.
package cri
