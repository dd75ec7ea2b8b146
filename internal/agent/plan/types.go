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
	// ResizeHash is the labels.SandboxResizeHash annotation, empty on
	// sandboxes made before it existed.
	ResizeHash string
}

// Container is one container the runtime holds for the pod, in any sandbox.
type Container struct {
	ID        string
	Name      string // labels.ContainerName
	Type      string // labels.ContainerType: init, app, ephemeral
	SandboxID string
	State     ContainerState
	Hash      string // labels.ContainerHash
	// ResizeHash is the labels.ContainerResizeHash annotation, empty on
	// containers made before it existed (any change restarts those).
	ResizeHash string
	// Resources is what the runtime reports the container runs with now,
	// nil when it reports nothing.
	Resources *Resources
	Attempt   uint32 // the CRI metadata attempt, which is the restart count
	ExitCode  int32
	Reason    string // the runtime's reason, e.g. "OOMKilled", "Completed", "Error"
	Message   string
	Image     string // the image as the manifest names it
	ImageRef  string // the image id the runtime resolved
	// RestoredFrom is the checkpoint the runtime restored the container
	// from (labels.RuntimeCheckpointImage), empty when it was not.
	RestoredFrom string
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	// GracePeriod is the pod's termination grace period when the container
	// was made (labels.TerminationGracePeriod), nil if it has none: what
	// stopping it allows when the pod's manifest is gone.
	GracePeriod *int64
}

// Resources is the part of a container's CRI resources that a resize in
// place changes: CPU shares (from the CPU request), CFS quota and period
// (from the CPU limit), and the memory limit in bytes (0: none).
type Resources struct {
	CPUShares   int64
	CPUQuota    int64
	CPUPeriod   int64
	MemoryLimit int64
}

// cpuDiffers and memoryDiffers tell which of the resizePolicy's resources
// a change touches.
func (r Resources) cpuDiffers(o Resources) bool {
	return r.CPUShares != o.CPUShares || r.CPUQuota != o.CPUQuota || r.CPUPeriod != o.CPUPeriod
}

func (r Resources) memoryDiffers(o Resources) bool { return r.MemoryLimit != o.MemoryLimit }

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
	// SandboxResizeHash is the same hash of the sandbox config without its
	// resources: a live sandbox whose Hash differs but whose ResizeHash
	// matches it was only resized, and is kept.
	SandboxResizeHash string
	// Resources is what each container of the spec (app containers and
	// sidecars, by name) would be created with now. A running container
	// whose spec changed only in its resources (ResizeHash matches) is
	// compared with it: unchanged, it is kept; changed, its resizePolicy
	// decides between a resize in place and a restart. A container missing
	// here is restarted.
	Resources map[string]Resources
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
// this order: KillPod; ContainersToKill; ContainersToResize (around the pod
// cgroup's resize); CreateSandbox; SidecarsToStart; NextInit;
// ContainersToStart.
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
	// ContainersToResize are running containers whose resources change in
	// place, without a restart. They are never killed or started in the
	// same plan, and never come with CreateSandbox or KillPod.
	ContainersToResize []Resize
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

// Resize asks for a running container's resources to be changed in place
// to To.
type Resize struct {
	ID      string
	Name    string
	Type    string // labels.TypeApp, or labels.TypeInit for a sidecar
	Index   int    // in Spec.Containers, or Spec.InitContainers for a sidecar
	To      Resources
	Message string
}

// Start asks for one container to be started.
type Start struct {
	Index        int    // in Spec.Containers (Spec.InitContainers for SidecarsToStart)
	RestartCount uint32 // the attempt for CreateContainer
	Message      string // why it (re)starts, for the log
}
