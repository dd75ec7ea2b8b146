package lifecycle

import "time"

// Kind is what happened to a container or a sandbox.
type Kind int

// The kinds of lifecycle events, the four the CRI knows.
const (
	// Created: a container was created (not started), or a sandbox was
	// made.
	Created Kind = iota + 1
	// Started: a container's process started, or a sandbox became ready.
	Started
	// Stopped: a container's process exited (or a container that never
	// ran was marked exited), or a sandbox was stopped.
	Stopped
	// Deleted: a container or a sandbox was removed.
	Deleted
)

func (k Kind) String() string {
	switch k {
	case Created:
		return "created"
	case Started:
		return "started"
	case Stopped:
		return "stopped"
	case Deleted:
		return "deleted"
	}
	return "unknown"
}

// Event is one lifecycle transition. A sandbox's own events carry the
// sandbox id as both ID and SandboxID, as containerd's do.
type Event struct {
	Kind Kind
	// ID is the container's id, or the sandbox's for a sandbox event.
	ID string
	// SandboxID is the pod sandbox the container belongs to.
	SandboxID string
	// At is when the transition was recorded.
	At time.Time
}

// IsSandbox reports whether e is about a sandbox rather than a container.
func (e Event) IsSandbox() bool { return e.ID == e.SandboxID }

// Publisher takes events; a Broadcaster[Event] is one. Publish must not
// block.
type Publisher interface {
	Publish(Event)
}
