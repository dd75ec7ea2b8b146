package plan

// Kill reasons, the Reason of a Kill. They are short and stable so that the
// podstatus package and the event log can match on them.
const (
	// ReasonSpecChanged: the container's hash differs from ContainerHash of
	// the manifest; it is started again whatever the restart policy.
	ReasonSpecChanged = "spec changed"
	// ReasonResizeRestart: only the container's resources changed, and
	// the resizePolicy of one that differs is RestartContainer; it is
	// started again whatever the restart policy, as for a spec change.
	ReasonResizeRestart = "resize needs a restart"
	// ReasonLivenessFailed and ReasonStartupFailed: a probe failed past its
	// threshold; the restart policy decides whether it starts again.
	ReasonLivenessFailed = "liveness probe failed"
	ReasonStartupFailed  = "startup probe failed"
	// ReasonUnknownState: the runtime cannot tell whether the container
	// runs; it is stopped before a new instance starts.
	ReasonUnknownState = "unknown state"
	// ReasonNeverStarted: the container was created but never started (the
	// agent stopped between CreateContainer and StartContainer); it is
	// replaced by a new instance.
	ReasonNeverStarted = "created but never started"
	// ReasonNotInSpec: no container of that name is in the pod spec.
	ReasonNotInSpec = "not in the pod spec anymore"
	// ReasonDuplicate: an older live instance of a name whose newer
	// instance is also there.
	ReasonDuplicate = "older duplicate instance"
	// ReasonOldSandbox: a live container in a sandbox that is not the
	// pod's current one.
	ReasonOldSandbox = "in an old sandbox"
)
