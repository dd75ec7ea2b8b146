// Package netns creates, pins and removes Linux namespaces for pod
// sandboxes.
//
// A pinned namespace is a bind mount of /proc/<tid>/ns/<kind> on a file, so
// it lives without any process in it; containers join it by that path. The
// namespaces are made on a locked OS thread that is never returned to the Go
// scheduler (the thread exits with its goroutine), so no other goroutine ever
// runs inside a pod's namespaces. Pin rolls back whatever it made when a step
// fails; Remove is idempotent.
package netns
