// Package daemon is the composition root of crib's runtime: it builds every
// part from the configuration, restores their state, serves the CRI socket
// and owns the order of start and shutdown. It holds no business logic.
//
// Shutdown stops serving and closes the metadata store; containers, their
// monitors and pods' pause processes keep running, to be adopted by the
// next start.
package daemon
