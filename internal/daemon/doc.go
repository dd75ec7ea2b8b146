// Package daemon is the composition root of crib's runtime: it builds every
// part from the configuration, restores their state, serves the CRI socket
// and owns the order of start and shutdown. It holds no business logic.
//
// A Daemon has three steps. New validates the configuration and builds the
// parts, opening what they stand on (the directories, the metadata and
// image stores, the CNI watch, the streaming server's port). Run restores
// what the previous daemon left (restore.go) before it serves, so no call
// sees a half-restored runtime, then serves until its context ends.
// Shutdown stops serving and closes what New opened, newest first.
//
// The sandbox and container managers publish their lifecycle events to one
// lifecycle.Broadcaster, which the CRI server's GetContainerEvents streams
// read. Shutdown first closes it, ending every such stream, then stops
// serving and closes the metadata store; containers, their monitors and
// pods' pause processes keep running, to be adopted by the next start.
package daemon
