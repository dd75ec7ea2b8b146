// Package daemon is the composition root of crib's runtime: it builds every
// part from the configuration, restores their state, serves the CRI socket
// and owns the order of start and shutdown. It holds no business logic.
//
// The sandbox and container managers publish their lifecycle events to one
// events.Broadcaster, which the CRI server's GetContainerEvents streams
// read. Shutdown first closes it, ending every such stream, then stops
// serving and closes the metadata store; containers, their monitors and
// pods' pause processes keep running, to be adopted by the next start.
package daemon
