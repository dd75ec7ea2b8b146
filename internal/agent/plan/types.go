package plan

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// SandboxState is the runtime's view of a sandbox.
type SandboxState int

const (
	SandboxNotReady SandboxState = iota
	SandboxReady
)

// ContainerState is the runtime's view of a container.
type ContainerState int

const (
	ContainerCreated ContainerState = iota
	ContainerRunning
	ContainerExited
	ContainerUnknown
)

func (s ContainerState) String() string {
	switch s {
	case ContainerCreated:
		return "created"
	case ContainerRunning:
		return "running"
	case ContainerExited:
		return "exited"
	default:
		return "unknown"
	}
}

// Sandbox is one sandbox the runtime holds for the pod.
type Sandbox struct {
	ID        string
	Attempt   uint32
	State     SandboxState
	IP        string    // primary pod IP, empty on the host network
	IPs       []string  // every pod IP, primary first
	CreatedAt time.Time // for ordering; newest first in Observed
	Hash      string    // labels.SandboxHash annotation
}

// Container is one container the runtime holds for the pod, in any sandbox.
type Container struct {
	ID         string
	Name       string // labels.ContainerName
	Type       string // labels.ContainerType: init, app, ephemeral
	SandboxID  string
	State      ContainerState
	Hash       string // labels.ContainerHash
	Attempt    uint32 // the CRI metadata attempt, which is the restart count
	ExitCode   int32
	Reason     string // the runtime's reason, e.g. "OOMKilled", "Completed", "Error"
	Message    string
	Image      string // the image as the manifest names it
	ImageRef   string // the image id the runtime resolved
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	// GracePeriod is the pod's termination grace period when the container
	// was made (labels.TerminationGracePeriod), nil if it has none: what
	// stopping it allows when the pod's manifest is gone.
	GracePeriod *int64
}

// Observed is everything the runtime reports for one pod. Sandboxes and
// Containers are each sorted newest first (by CreatedAt).
type Observed struct {
	Sandboxes  []Sandbox
	Containers []Container
}

// Input is what ComputeActions decides from.
type Input struct {
	Pod      *corev1.Pod
	Observed Observed
	// SandboxHash is the hash of the sandbox config this pod wants now
	// (kuberuntime computes it from the generated PodSandboxConfig); a live
	// sandbox with a different Hash is replaced.
	SandboxHash string
	// LivenessFailed and StartupFailed name container IDs whose liveness or
	// startup probe has failed past its threshold; they are killed and, by
	// restart policy, started again.
	LivenessFailed map[string]bool
	StartupFailed  map[string]bool
	// Started names running container IDs whose startup probe has
	// succeeded. Only sidecars (init containers with restartPolicy
	// Always) read it: a running sidecar without a startup probe counts as
	// started at once; one with a startup probe only once it is named here.
	// kuberuntime fills it from the prober's startup results.
	Started map[string]bool
}

// Kill asks for one container to be stopped.
type Kill struct {
	ID      string
	Name    string
	Reason  string // why, in the kubelet's words, e.g. "spec changed", "liveness probe failed"
	Message string
}

// Actions is the plan for one sync of one pod. The executor applies it in
// this order: KillPod; ContainersToKill; CreateSandbox; SidecarsToStart;
// NextInit; ContainersToStart.
//
// When KillPod is set without CreateSandbox the pod is done for now:
// ContainersToKill, SidecarsToStart and ContainersToStart are empty and
// NextInit is -1. When CreateSandbox is set, ContainersToKill and
// SidecarsToStart are empty and either NextInit is 0 or ContainersToStart
// lists the app containers.
type Actions struct {
	// KillPod stops every container and every sandbox of the pod before
	// anything else, because the sandbox is gone, changed, or the pod is
	// finished. It is set only when something is there to stop.
	KillPod bool
	// CreateSandbox asks for a new sandbox with Attempt.
	CreateSandbox bool
	Attempt       uint32
	// SandboxID is the sandbox the containers run in: the live one, or
	// empty when CreateSandbox is set.
	SandboxID string
	// ContainersToKill are containers to stop (and remove later) without
	// touching the sandbox.
	ContainersToKill []Kill
	// NextInit is the index in Spec.InitContainers of the init container to
	// start now, or -1.
	NextInit int
	// NextInitRestartCount is the attempt for NextInit's CreateContainer:
	// one more than the highest attempt of that name the runtime still
	// holds (in any sandbox), or 0.
	NextInitRestartCount uint32
	// SidecarsToStart are sidecars (init containers with restartPolicy
	// Always, Start.Index in Spec.InitContainers) that already got their
	// turn in the init sequence and must run again: exited, killed in this
	// plan (spec changed, probe failed, unknown state) or gone. They come
	// before NextInit, in spec order, and may come with ContainersToStart.
	SidecarsToStart []Start
	// ContainersToStart are indexes in Spec.Containers to start now, each
	// with its next restart count.
	ContainersToStart []Start
	// InitFailed is set when an init container failed and the pod's restart
	// policy is Never: the pod is Failed and nothing more is started.
	InitFailed bool
	// Reason says in a few words why the plan is what it is, for the debug log.
	Reason string
}

// Start asks for one container to be started.
type Start struct {
	Index        int    // in Spec.Containers (Spec.InitContainers for SidecarsToStart)
	RestartCount uint32 // the attempt for CreateContainer
	Message      string // why it (re)starts, for the log
}
