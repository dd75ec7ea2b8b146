// Package streaming serves the CRI streaming sessions (Exec, Attach,
// PortForward) on crib's streaming server, built on k8s.io/cri-streaming:
// Runtime implements that library's Runtime over crib's container and
// sandbox managers, and Server listens, hands out the single-use URLs the
// RPCs return and serves them.
//
// It owns the sessions' plumbing only: the exec'd process and its pty
// belong to package ociruntime, attach to the container's monitor, the
// pod's network namespace to package sandbox; it knows no gRPC.
//
// Invariants: a session never outlives its client. Server gives every
// request a context that ends when the client's connection does (the
// library hands exec and attach the request's context), so an abandoned
// exec is killed and an abandoned attach ends; Close ends every session.
// A non-zero exit of an exec'd process is a k8s.io/utils/exec ExitError,
// which the library reports to the client as the exit code.
package streaming
