package kuberuntime

import (
	"context"
	"log/slog"

	"github.com/containerd/errdefs/pkg/errgrpc"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	"k8s.io/utils/clock"

	"github.com/crib-dev/crib/internal/agent/backoff"
	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/agent/prober"
	"github.com/crib-dev/crib/internal/agent/userns"
)

// Volumes prepares and removes a pod's volumes on the host.
type Volumes interface {
	Prepare(ctx context.Context, pod *corev1.Pod, configMaps map[string]*corev1.ConfigMap, secrets map[string]*corev1.Secret) (map[string]string, error)
	Remove(ctx context.Context, uid string) error
	TerminationMessagePath(uid, container string, restartCount uint32) (string, error)
	// PrepareSubPath resolves subPath safely inside the volume at
	// volumePath and returns the host path to mount instead (see
	// volume.Manager.PrepareSubPath).
	PrepareSubPath(uid, volumeName, volumePath, subPath, container string, index int) (string, error)
}

// Cgroups makes and removes the pod-level cgroups the kubelet keeps per
// QoS class; EnsurePod returns the cgroup the sandbox config names.
type Cgroups interface {
	EnsurePod(pod *corev1.Pod) (string, error)
	RemovePod(uid string) error
}

// UserNamespaces gives each pod with hostUsers: false its own block of host
// ids.
type UserNamespaces interface {
	// Ensure returns the block pod uid holds, giving it one first (kept
	// where a restart finds it) if it holds none.
	Ensure(uid string) (userns.Range, error)
}

// Probes answers for the probe results of running containers.
type Probes interface {
	Result(containerID string, k prober.Kind) prober.Result
}

// Recorder records an event about a pod.
type Recorder interface {
	Event(pod *corev1.Pod, eventType, reason, message string)
}

// Config holds a Manager's collaborators. Every field but Log, Probes and
// Recorder is required.
type Config struct {
	Runtime internalapi.RuntimeService
	Images  internalapi.ImageManagerService
	Volumes Volumes
	// Cgroups, when set, makes each pod's cgroup before its sandbox; nil
	// leaves pod cgroups to the runtime.
	Cgroups Cgroups
	// UserNamespaces, when set, gives pods with hostUsers: false their
	// ids; nil refuses such pods.
	UserNamespaces UserNamespaces
	Probes         Probes
	Recorder       Recorder
	// Hooks runs a lifecycle handler (postStart, preStop) in a container.
	Hooks     func(ctx context.Context, pod *corev1.Pod, c *corev1.Container, containerID, podIP string, h *corev1.LifecycleHandler) error
	Clock     clock.Clock
	PodConfig podconfig.Options
	// CrashBackoff delays restarts of containers that exited;
	// PullBackoff delays retries of failed image pulls.
	CrashBackoff *backoff.Backoff
	PullBackoff  *backoff.Backoff
	// Pulling, when set, is told that a pull of a container's image
	// begins; the pull waits for it to return, and the function it
	// returns is called once the pull ended. The agent shows the pull's
	// progress with it while the sync is busy.
	Pulling func(pod *corev1.Pod, container, image string) (ended func())
	Log     *slog.Logger
}

// Manager runs pods over a CRI runtime. It is safe for concurrent use by
// different pods; calls for one pod must be serialised by the caller (the
// pod worker does that). It keeps nothing per pod: what it learns of a pod
// goes back to the caller in results (SyncResult, PodRuntime), which the
// caller keeps in its record of the pod and hands back when it matters.
type Manager struct {
	cfg Config
}

// New returns a Manager. It does no I/O.
func New(cfg Config) *Manager {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Recorder == nil {
		cfg.Recorder = nopRecorder{}
	}
	return &Manager{cfg: cfg}
}

type nopRecorder struct{}

func (nopRecorder) Event(*corev1.Pod, string, string, string) {}

// fromGRPC gives a CRI client's error its errdefs class by the runtime's
// gRPC code (errgrpc.ToNative, the inverse of the table crib's CRI edge
// answers with), so that callers can test for NotFound whatever runtime
// answered. An error without a status (the client's own) is kept as it is,
// whole chain and all.
func fromGRPC(err error) error {
	if _, ok := status.FromError(err); !ok {
		return err
	}
	return errgrpc.ToNative(err)
}
