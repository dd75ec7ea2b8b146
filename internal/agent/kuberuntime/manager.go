package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	"k8s.io/utils/clock"

	"github.com/crib-dev/crib/internal/agent/backoff"
	"github.com/crib-dev/crib/internal/agent/plan"
	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/agent/prober"
	agentstatus "github.com/crib-dev/crib/internal/agent/status"
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
	Cgroups  Cgroups
	Probes   Probes
	Recorder Recorder
	// Hooks runs a lifecycle handler (postStart, preStop) in a container.
	Hooks     func(ctx context.Context, pod *corev1.Pod, c *corev1.Container, containerID, podIP string, h *corev1.LifecycleHandler) error
	Clock     clock.Clock
	PodConfig podconfig.Options
	// CrashBackoff delays restarts of containers that exited;
	// PullBackoff delays retries of failed image pulls.
	CrashBackoff *backoff.Backoff
	PullBackoff  *backoff.Backoff
	Log          *slog.Logger
}

// Manager runs pods over a CRI runtime. It is safe for concurrent use by
// different pods; calls for one pod must be serialised by the caller (the
// pod worker does that).
type Manager struct {
	cfg Config

	mu sync.Mutex
	// statuses remembers the status of containers that can no longer
	// change (exited) or change only by exiting (running), by ID.
	statuses map[string]plan.Container
	// waiting says why a container of a pod is not running: pod UID ->
	// container name -> reason.
	waiting map[string]map[string]agentstatus.Waiting
	// grace is each container's termination grace period as stored in its
	// annotations, for pods whose manifest is gone.
	grace map[string]int64
	// ips are the IPs of ready sandboxes, by sandbox ID.
	ips map[string][]string
}

// New returns a Manager. It does no I/O.
func New(cfg Config) *Manager {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Recorder == nil {
		cfg.Recorder = nopRecorder{}
	}
	return &Manager{
		cfg:      cfg,
		statuses: map[string]plan.Container{},
		waiting:  map[string]map[string]agentstatus.Waiting{},
		grace:    map[string]int64{},
		ips:      map[string][]string{},
	}
}

type nopRecorder struct{}

func (nopRecorder) Event(*corev1.Pod, string, string, string) {}

// Waiting returns why the pod's containers are not running, by container
// name. The map is a copy.
func (m *Manager) Waiting(uid string) map[string]agentstatus.Waiting {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]agentstatus.Waiting, len(m.waiting[uid]))
	for k, v := range m.waiting[uid] {
		out[k] = v
	}
	return out
}

func (m *Manager) setWaiting(uid, name, reason, message string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.waiting[uid] == nil {
		m.waiting[uid] = map[string]agentstatus.Waiting{}
	}
	m.waiting[uid][name] = agentstatus.Waiting{Reason: reason, Message: message}
}

func (m *Manager) clearWaiting(uid, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.waiting[uid], name)
}

func (m *Manager) forgetPod(uid string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.waiting, uid)
}

// fromGRPC gives a CRI client's error its errdefs class, so that callers can
// test for NotFound whatever runtime answered.
func fromGRPC(err error) error {
	if err == nil {
		return nil
	}
	s, ok := status.FromError(err)
	if !ok {
		return err
	}
	var class error
	switch s.Code() {
	case codes.NotFound:
		class = errdefs.ErrNotFound
	case codes.InvalidArgument:
		class = errdefs.ErrInvalidArgument
	case codes.AlreadyExists:
		class = errdefs.ErrAlreadyExists
	case codes.FailedPrecondition:
		class = errdefs.ErrFailedPrecondition
	case codes.Unavailable:
		class = errdefs.ErrUnavailable
	default:
		return err
	}
	if errors.Is(err, class) {
		return err
	}
	return fmt.Errorf("%s: %w", s.Message(), class)
}
