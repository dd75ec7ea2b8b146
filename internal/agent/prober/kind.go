package prober

import "fmt"

// Kind is the kind of a probe.
type Kind int

const (
	// Liveness decides whether a container must be restarted.
	Liveness Kind = iota
	// Readiness decides whether a container is ready to serve.
	Readiness
	// Startup gates liveness and readiness until the application has started.
	Startup

	numKinds = 3
)

// String returns the kind's name as the kubelet writes it in events.
func (k Kind) String() string {
	switch k {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	case Startup:
		return "Startup"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Result is the outcome of a probe, or the cached verdict of a worker.
type Result int

const (
	// Unknown means no verdict (no probe of this kind, or not yet decided).
	Unknown Result = iota
	// Success means the probe passed (its success threshold was reached).
	Success
	// Failure means the probe failed (its failure threshold was reached).
	Failure
)

// String returns the result in lower case, as metrics label it.
func (r Result) String() string {
	switch r {
	case Unknown:
		return "unknown"
	case Success:
		return "success"
	case Failure:
		return "failure"
	}
	return fmt.Sprintf("Result(%d)", int(r))
}
