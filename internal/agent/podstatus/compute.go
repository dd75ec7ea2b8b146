package podstatus

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crib-dev/crib/internal/agent/plan"
	"github.com/crib-dev/crib/internal/agent/podconfig"
)

// ContainerIDScheme prefixes every container ID in a status, as
// "crib://<id>". The kubelet uses the runtime's name ("containerd://");
// the agent cannot know which runtime answers on the socket, so it names
// itself instead.
const ContainerIDScheme = "crib://"

// Waiting reasons the status uses itself. The executor supplies the others
// (ErrImagePull, ImagePullBackOff, CrashLoopBackOff,
// CreateContainerConfigError, CreateContainerError, RunContainerError,
// PostStartHookError...) through Facts.Waiting.
const (
	ReasonContainerCreating      = "ContainerCreating"
	ReasonPodInitializing        = "PodInitializing"
	ReasonContainerStatusUnknown = "ContainerStatusUnknown"
	ReasonCrashLoopBackOff       = "CrashLoopBackOff"
)

// Terminated reasons used when the runtime gives none.
const (
	ReasonCompleted = "Completed"
	ReasonError     = "Error"
	ReasonOOMKilled = "OOMKilled"
)

// Condition reasons, the kubelet's words.
const (
	ReasonPodCompleted             = "PodCompleted"
	ReasonPodFailed                = "PodFailed"
	ReasonContainersNotReady       = "ContainersNotReady"
	ReasonContainersNotInitialized = "ContainersNotInitialized"
	ReasonReadinessGatesNotReady   = "ReadinessGatesNotReady"
)

// Waiting is why a container is not running, as the executor saw it when
// it could not (re)start it: the reason is one of the kubelet's
// (ErrImagePull, ImagePullBackOff, CrashLoopBackOff, ...) and the message
// explains it.
type Waiting struct {
	Reason, Message string
}

// Facts is everything Compute needs about one pod. Only Pod is required;
// nil functions and maps mean "nothing to say".
type Facts struct {
	Pod      *corev1.Pod
	Observed plan.Observed
	// Waiting is set by the executor for containers (by name) it could not
	// start; it wins over ContainerCreating and over a terminated instance
	// that is going to be restarted.
	Waiting map[string]Waiting
	// Ready is the readiness probe result for a running container ID; true
	// when the container has no readiness probe. Nil means always ready.
	Ready func(containerID string) bool
	// Started is the startup probe result; true when the container has no
	// startup probe. Nil means always started.
	Started func(containerID string) bool
	// SandboxError is the last failure to create the sandbox (RunPodSandbox
	// or its network); it sets PodReadyToStartContainers=False with it as
	// the message.
	SandboxError string
	// Terminating says the manifest was removed and the pod is being torn
	// down: no container is reported ready any more. The caller also sets
	// the pod's DeletionTimestamp (see MarkTerminating) so that tables show
	// Terminating.
	Terminating bool
	// Messages holds the termination message (by container name) read from
	// the newest instance's terminationMessagePath; it wins over the
	// runtime's message.
	Messages map[string]string
	// Previous is the status computed last time, if any: condition
	// transition times are kept when a condition did not change, the start
	// time is kept, and a terminal phase never goes back.
	Previous *corev1.PodStatus
	// Now stamps condition transitions.
	Now time.Time
	// StartTime is when the agent first saw the pod.
	StartTime time.Time
	// HostIP is this node's address.
	HostIP string
	// Allocated is the version of Pod whose resources the node admitted
	// and the containers are to run with; nil means Pod. It differs from
	// Pod while a resize is pending, and ResizePending says why.
	Allocated     *corev1.Pod
	ResizePending *ResizePending
	// ResizeError is why the last resize in place failed: a resize in
	// progress shows it (reason Error) until a sync resizes it.
	ResizeError string
}

// Compute returns the pod's status from what the runtime reports, the way
// the kubelet's generateAPIPodStatus does it. A nil Pod gives an Unknown
// phase and nothing else.
func Compute(f Facts) corev1.PodStatus {
	pod := f.Pod
	var st corev1.PodStatus
	if pod == nil {
		st.Phase = corev1.PodUnknown
		return st
	}
	if f.HostIP != "" {
		st.HostIP = f.HostIP
		st.HostIPs = []corev1.HostIP{{IP: f.HostIP}}
	}
	st.PodIP, st.PodIPs = podIPs(f.Observed)
	st.QOSClass = podconfig.QOSClass(pod)
	st.StartTime = startTime(f)

	initDone := initContainersDone(f)
	st.InitContainerStatuses = containerStatuses(f, pod.Spec.InitContainers, true, initDone)
	st.ContainerStatuses = containerStatuses(f, pod.Spec.Containers, false, initDone)

	st.Phase = phase(pod, st.InitContainerStatuses, st.ContainerStatuses)
	if prev := f.Previous; prev != nil && isTerminal(prev.Phase) && !isTerminal(st.Phase) {
		// A finished pod stays finished, as in the kubelet.
		st.Phase = prev.Phase
	}
	if prev := f.Previous; prev != nil && prev.Phase == st.Phase {
		st.Reason, st.Message = prev.Reason, prev.Message
	}

	st.Conditions = conditions(f, &st)
	return st
}

func isTerminal(p corev1.PodPhase) bool {
	return p == corev1.PodSucceeded || p == corev1.PodFailed
}

// startTime keeps the first start time ever reported.
func startTime(f Facts) *metav1.Time {
	if f.Previous != nil && f.Previous.StartTime != nil {
		t := *f.Previous.StartTime
		return &t
	}
	if f.StartTime.IsZero() {
		return nil
	}
	t := metav1.NewTime(f.StartTime)
	return &t
}

// podIPs returns the IPs of the newest ready sandbox.
func podIPs(obs plan.Observed) (string, []corev1.PodIP) {
	for _, sb := range obs.Sandboxes {
		if sb.State != plan.SandboxReady {
			continue
		}
		ips := sb.IPs
		if len(ips) == 0 && sb.IP != "" {
			ips = []string{sb.IP}
		}
		if len(ips) == 0 {
			return "", nil
		}
		out := make([]corev1.PodIP, 0, len(ips))
		for _, ip := range ips {
			out = append(out, corev1.PodIP{IP: ip})
		}
		return out[0].IP, out
	}
	return "", nil
}

// sandboxReady says whether the newest sandbox is up.
func sandboxReady(obs plan.Observed) bool {
	newest, ok := newestSandbox(obs)
	return ok && newest.State == plan.SandboxReady
}

func newestSandbox(obs plan.Observed) (plan.Sandbox, bool) {
	var best plan.Sandbox
	found := false
	for _, sb := range obs.Sandboxes {
		if !found || sb.CreatedAt.After(best.CreatedAt) ||
			(sb.CreatedAt.Equal(best.CreatedAt) && sb.Attempt > best.Attempt) {
			best, found = sb, true
		}
	}
	return best, found
}

// MarkTerminating returns a copy of pod with a deletion timestamp at now and
// its grace period, which is how a pod being torn down looks to kubectl and
// to statusapi.WritePods.
func MarkTerminating(pod *corev1.Pod, now time.Time) *corev1.Pod {
	out := pod.DeepCopy()
	if out.DeletionTimestamp == nil {
		t := metav1.NewTime(now)
		out.DeletionTimestamp = &t
		if g := out.Spec.TerminationGracePeriodSeconds; g != nil {
			grace := *g
			out.DeletionGracePeriodSeconds = &grace
		}
	}
	return out
}
