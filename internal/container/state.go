package container

import (
	"fmt"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/lifecycle"
)

// State is a container's lifecycle state.
type State string

// The states of a container. Creating is only ever seen on disk, where it
// marks a creation the daemon died in.
const (
	Creating State = "creating"
	Created  State = "created"
	Running  State = "running"
	Exited   State = "exited"
	Unknown  State = "unknown"
)

var transitions = map[State][]State{
	Creating: {Created},
	Created:  {Running, Exited, Unknown},
	Running:  {Exited, Unknown},
	Unknown:  {Exited},
}

// to returns nil if a container may go from s to next.
func (s State) to(next State) error {
	for _, ok := range transitions[s] {
		if ok == next {
			return nil
		}
	}
	return fmt.Errorf("container state %s cannot become %s: %w", s, next, errdefs.ErrFailedPrecondition)
}

// event is the lifecycle event of entering s, if it has one. Becoming
// Unknown has none: nothing is known to have happened to the process.
func (s State) event() (lifecycle.Kind, bool) {
	switch s {
	case Running:
		return lifecycle.Started, true
	case Exited:
		return lifecycle.Stopped, true
	}
	return 0, false
}
