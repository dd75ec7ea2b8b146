// Package undo is the rollback stack of multi-step operations: each step
// that makes something pushes the named action that unmakes it, and a failed
// operation runs the stack backwards.
package undo
