// Package undo is the rollback stack of multi-step operations: an operation
// pushes named actions that unmake what it made, and a failed one runs the
// stack backwards. One action may unmake many steps: RunPodSandbox and
// CreateContainer push one teardown of whatever exists once their intent
// record is written, and CreateContainer also one for each hold and each
// mount of an image volume.
package undo
