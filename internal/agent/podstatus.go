package agent

import (
	"maps"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/plan"
	"github.com/crib-dev/crib/internal/agent/podstatus"
)

// maxMessageBytes bounds a termination message, as the kubelet does.
const maxMessageBytes = 4096

// computeStatus is the pod's status from obs, what the runtime holds of
// it, and from its record: when it was first seen, why its containers
// wait, and whether a new version makes it start over.
func (a *Agent) computeStatus(pod *corev1.Pod, obs plan.Observed, sandboxError string, terminating bool) corev1.PodStatus {
	return a.computeStatusWaiting(pod, obs, sandboxError, terminating, nil)
}

// computeStatusWaiting is computeStatus with more reasons containers wait,
// by name, over those of the record (which it leaves as they are).
func (a *Agent) computeStatusWaiting(pod *corev1.Pod, obs plan.Observed, sandboxError string, terminating bool, more map[string]podstatus.Waiting) corev1.PodStatus {
	var previous *corev1.PodStatus
	if p, ok := a.store.Get(pod.UID); ok {
		previous = &p.Status
	}
	var startTime time.Time
	var waiting map[string]podstatus.Waiting
	var allocated *corev1.Pod
	var pending *podstatus.ResizePending
	var resizeError string
	a.withRecord(string(pod.UID), func(rec *podRecord) {
		startTime, waiting, resizeError = rec.firstSeen, rec.waiting, rec.resizeError
		if r := rec.resizePending; r != nil {
			// Until the resize is allocated, the containers are to run as
			// the node last allocated them.
			allocated, pending = rec.allocated, &podstatus.ResizePending{Reason: r.Reason, Message: r.Message}
		}
		if rec.fresh {
			// A new version of the pod: its status starts over, so that a
			// terminal phase of the old one does not stick.
			previous = nil
			rec.fresh = false
		}
	})
	if len(more) > 0 {
		waiting = maps.Clone(waiting)
		if waiting == nil {
			waiting = map[string]podstatus.Waiting{}
		}
		maps.Copy(waiting, more)
	}
	return podstatus.Compute(podstatus.Facts{
		Pod:          pod,
		Observed:     obs,
		Waiting:      waiting,
		Ready:        a.probes.Ready,
		Started:      a.probes.Started,
		SandboxError: sandboxError,
		Messages:     a.terminationMessages(pod, obs),
		Previous:     previous,
		Terminating:  terminating,
		Now:          a.cfg.Clock.Now(),
		StartTime:    startTime,
		HostIP:       firstOrEmpty(a.cfg.PodConfig.HostIPs),

		Allocated:     allocated,
		ResizePending: pending,
		ResizeError:   resizeError,
	})
}

// storeStatus records a pod's status and the metrics it implies: restarts,
// and the pod's start latency once all its containers first run.
func (a *Agent) storeStatus(pod *corev1.Pod, obs plan.Observed, st corev1.PodStatus) {
	uid := string(pod.UID)
	prev, hadPrev := a.store.Get(types.UID(uid))
	a.setStatus(pod, obs, st)
	if hadPrev {
		old := map[string]int32{}
		for _, c := range append(prev.Status.InitContainerStatuses, prev.Status.ContainerStatuses...) {
			old[c.Name] = c.RestartCount
		}
		for _, c := range append(st.InitContainerStatuses, st.ContainerStatuses...) {
			if c.RestartCount > old[c.Name] {
				a.metrics.ContainerRestarted(pod.Namespace, pod.Name, c.Name)
			}
		}
	}
	a.withRecord(uid, func(rec *podRecord) {
		if !rec.startMeasured && allRunning(st) {
			rec.startMeasured = true
			a.metrics.ObservePodStart(a.cfg.Clock.Since(rec.firstSeen))
		}
	})
}

// setStatus serves pod with st as its status, with the block of host ids
// it holds, if it holds one, in its labels.UserNamespace annotation, and
// the containers obs shows restored from a checkpoint in labels.Restored.
func (a *Agent) setStatus(pod *corev1.Pod, obs plan.Observed, st corev1.PodStatus) {
	annotate := func(k, v string) {
		pod = pod.DeepCopy()
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[k] = v
	}
	if r, ok := a.userns.Get(string(pod.UID)); ok {
		annotate(labels.UserNamespace, r.String())
	}
	if names := podstatus.Restored(pod, obs); len(names) > 0 {
		annotate(labels.Restored, strings.Join(names, ","))
	}
	a.store.Set(pod, st)
}

func allRunning(st corev1.PodStatus) bool {
	if len(st.ContainerStatuses) == 0 {
		return false
	}
	for _, c := range st.ContainerStatuses {
		if c.State.Running == nil {
			return false
		}
	}
	return true
}

// terminationMessages reads what exited containers wrote to their
// termination message files.
func (a *Agent) terminationMessages(pod *corev1.Pod, obs plan.Observed) map[string]string {
	out := map[string]string{}
	for _, c := range obs.Containers {
		if c.State != plan.ContainerExited {
			continue
		}
		if _, done := out[c.Name]; done {
			continue
		}
		path, err := a.volumes.TerminationMessagePath(string(pod.UID), c.Name, c.Attempt)
		if err != nil {
			continue
		}
		if msg := readLimited(path, maxMessageBytes); msg != "" {
			out[c.Name] = msg
		}
	}
	return out
}

func readLimited(path string, limit int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, limit)
	n, _ := f.Read(buf)
	return string(buf[:n])
}

func firstOrEmpty(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
