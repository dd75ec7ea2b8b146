package sandbox

import (
	"fmt"

	"github.com/containerd/errdefs"
)

// State is a sandbox's lifecycle state.
type State string

// The states a sandbox goes through. Creating is only ever seen on disk
// (and then means the daemon died mid-creation).
const (
	Creating State = "creating"
	Ready    State = "ready"
	NotReady State = "notready"
)

var transitions = map[State][]State{
	Creating: {Ready},
	Ready:    {NotReady},
	NotReady: {NotReady},
}

// to returns nil if a sandbox may go from s to next.
func (s State) to(next State) error {
	for _, ok := range transitions[s] {
		if ok == next {
			return nil
		}
	}
	return fmt.Errorf("sandbox state %s cannot become %s: %w", s, next, errdefs.ErrFailedPrecondition)
}
