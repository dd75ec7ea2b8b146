// Package lifecycle carries lifecycle events from the runtime's managers to
// whoever watches them, such as the CRI's GetContainerEvents streams.
//
// It owns two things: Event, a neutral description of one lifecycle
// transition of a container or a pod sandbox (no CRI types: the CRI edge
// converts), and Broadcaster, a fan-out of values to subscribers.
//
// Invariants: Publish never blocks and never calls out of the package, so
// it may be called while the publisher holds its own locks; every
// subscriber gets the values in the order they were published; a
// subscriber whose buffer is full is dropped (its channel is closed and its
// Err is ErrOverflow) rather than slowing the publisher or the other
// subscribers; values published while nobody subscribes are not kept. The
// Broadcaster starts no goroutines.
package lifecycle
