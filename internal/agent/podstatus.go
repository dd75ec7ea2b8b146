package agent

import (
	"maps"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/plan"
	"github.com/crib-dev/crib/internal/agent/podstatus"
)

// maxMessageBytes bounds a termination message, as the kubelet does.
const maxMessageBytes = 4096

// runtimeView is what the runtime, the prober and the containers' files
// show of a pod at one moment: with the pod's record, everything its
// status is computed from.
type runtimeView struct {
	Observed plan.Observed
	// SandboxError is why the sync could not make the sandbox, if it could
	// not.
	SandboxError string
	// Terminating says the pod is being torn down.
	Terminating bool
	// Waiting holds more reasons containers wait, by name, over those of
	// the record: an image being pulled.
	Waiting map[string]podstatus.Waiting
	// Messages are the exited containers' termination messages, by name.
	Messages       map[string]string
	Ready, Started func(containerID string) bool
	Now            time.Time
	HostIP         string
}

// view is what the runtime shows of pod now, obs being what it holds.
func (a *Agent) view(pod *corev1.Pod, obs plan.Observed) runtimeView {
	return runtimeView{
		Observed: obs,
		Messages: a.terminationMessages(pod, obs),
		Ready:    a.probes.Ready,
		Started:  a.probes.Started,
		Now:      a.cfg.Clock.Now(),
		HostIP:   firstOrEmpty(a.cfg.PodConfig.HostIPs),
	}
}

// statusOf is pod's status, computed from rec, the pod's record, and v,
// what the runtime shows of it: the record gives when the pod was first
// seen, why its containers wait, a resize pending or failed, and the last
// status shown, which the new one builds on unless a new version of the
// pod made it start over. It reads and writes nothing else.
func statusOf(rec podRecord, pod *corev1.Pod, v runtimeView) corev1.PodStatus {
	previous := rec.status
	if rec.fresh {
		// A new version of the pod: its status starts over, so that a
		// terminal phase of the old one does not stick.
		previous = nil
	}
	waiting := rec.waiting
	if len(v.Waiting) > 0 {
		waiting = maps.Clone(waiting)
		if waiting == nil {
			waiting = map[string]podstatus.Waiting{}
		}
		maps.Copy(waiting, v.Waiting)
	}
	f := podstatus.Facts{
		Pod:          pod,
		Observed:     v.Observed,
		Waiting:      waiting,
		Ready:        v.Ready,
		Started:      v.Started,
		SandboxError: v.SandboxError,
		Messages:     v.Messages,
		Previous:     previous,
		Terminating:  v.Terminating,
		Now:          v.Now,
		StartTime:    rec.firstSeen,
		HostIP:       v.HostIP,
		ResizeError:  rec.resizeError,
	}
	if r := rec.resizePending; r != nil {
		// Until the resize is allocated, the containers are to run as the
		// node last allocated them.
		f.Allocated = rec.allocated
		f.ResizePending = &podstatus.ResizePending{Reason: r.Reason, Message: r.Message}
	}
	return podstatus.Compute(f)
}

// showStatus serves st, computed from rec, as pod's status, and records in
// the table that it was shown. With metrics set it also observes what the
// status implies: restarts, and the pod's start latency once all its
// containers first run. A pod the table forgot meanwhile shows nothing.
func (a *Agent) showStatus(rec podRecord, pod *corev1.Pod, obs plan.Observed, st corev1.PodStatus, metrics bool) {
	shown, ok := a.table.statusShown(rec.uid, rec.version, st, metrics)
	if !ok {
		return
	}
	a.setStatus(pod, obs, st)
	if !metrics {
		return
	}
	if prev := shown.previous; prev != nil {
		old := map[string]int32{}
		for _, c := range append(prev.InitContainerStatuses, prev.ContainerStatuses...) {
			old[c.Name] = c.RestartCount
		}
		for _, c := range append(st.InitContainerStatuses, st.ContainerStatuses...) {
			if c.RestartCount > old[c.Name] {
				a.metrics.ContainerRestarted(pod.Namespace, pod.Name, c.Name)
			}
		}
	}
	if shown.started {
		a.metrics.ObservePodStart(a.cfg.Clock.Since(shown.firstSeen))
	}
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
