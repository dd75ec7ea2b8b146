// Package labels names the labels and annotations the agent puts on the
// sandboxes and containers it creates. They are the only memory the agent
// keeps: after a restart it rebuilds every pod from them, so they carry the
// same keys the kubelet uses and any tool that knows those keys (crictl,
// critest, a kubelet-aware log collector) can read them.
package labels

// Labels on both sandboxes and containers.
const (
	PodName      = "io.kubernetes.pod.name"
	PodNamespace = "io.kubernetes.pod.namespace"
	PodUID       = "io.kubernetes.pod.uid"
	// ManagedBy marks objects the agent created, so that it never adopts
	// or removes what another client of the same runtime made. Its value
	// names the agent (ManagedByValue for the node's `crib agent`), so
	// that agents sharing a runtime leave each other's pods alone.
	ManagedBy      = "io.crib.agent.managed"
	ManagedByValue = "true"
)

// Labels on containers only.
const (
	ContainerName = "io.kubernetes.container.name"
)

// Annotations on containers.
const (
	// ContainerHash is plan.ContainerHash of the spec the container was
	// created from; a different hash in the manifest restarts it.
	ContainerHash = "io.kubernetes.container.hash"
	// RestartCount is the container's restart count when it was created.
	RestartCount = "io.kubernetes.container.restartCount"
	// ContainerType is "init", "app" or "ephemeral".
	ContainerType = "io.crib.agent.container.type"
	// ContainerResizeHash is plan.ResizeHash of the spec the container was
	// created from: the spec without its resources. When only
	// ContainerHash differs, the change is a resize, which the container's
	// resizePolicy may allow in place. Containers made before it existed
	// lack it and are restarted on any change.
	ContainerResizeHash = "io.crib.agent.container.resizeHash"
	// TerminationMessagePath mirrors the container's field so that the
	// status can be read back after the manifest changed.
	TerminationMessagePath = "io.kubernetes.container.terminationMessagePath"
	// TerminationGracePeriod is the pod's grace period in seconds.
	TerminationGracePeriod = "io.kubernetes.pod.terminationGracePeriod"
)

// Annotations on sandboxes.
const (
	// SandboxHash is plan.SandboxHash of the pod-level fields the sandbox
	// was created from; a different hash recreates the sandbox.
	SandboxHash = "io.crib.agent.sandbox.hash"
	// SandboxResizeHash is the same hash of the sandbox config without its
	// resources: a sandbox whose SandboxHash differs but whose
	// SandboxResizeHash matches was only resized, and is kept.
	SandboxResizeHash = "io.crib.agent.sandbox.resizeHash"
)

// Annotations on the pods the agent's status API serves.
const (
	// UserNamespace is the block of host ids a pod with hostUsers: false
	// holds, "FIRST+LENGTH" (ids 0 to LENGTH-1 inside are FIRST on); pods
	// with the host's users have none.
	UserNamespace = "io.crib.agent.userns"
	// Restored names the containers the runtime restored from a checkpoint
	// archive, comma-separated, in the pod's order: those whose newest
	// instance carries RuntimeRestored.
	Restored = "io.crib.agent.restored"
)

// Annotations a runtime puts on a container it restored from a checkpoint
// (containerd's names; crib's runtime gives the same).
const (
	// RuntimeRestored is "true" on a restored container.
	RuntimeRestored = "restored"
	// RuntimeCheckpointImage is the archive (or checkpoint image) it was
	// restored from.
	RuntimeCheckpointImage = "checkpointImage"
)

// Container types, the values of ContainerType.
const (
	TypeInit      = "init"
	TypeApp       = "app"
	TypeEphemeral = "ephemeral"
)
