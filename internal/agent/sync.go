package agent

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crib-dev/crib/internal/agent/kuberuntime"
	"github.com/crib-dev/crib/internal/agent/plan"
	"github.com/crib-dev/crib/internal/agent/prober"
	"github.com/crib-dev/crib/internal/agent/source"
	"github.com/crib-dev/crib/internal/agent/status"
)

// noResult stands for a sync that did nothing.
var noResult kuberuntime.SyncResult

// maxMessageBytes bounds a termination message, as the kubelet does.
const maxMessageBytes = 4096

// syncPod is one pod worker's turn: run the pod as its manifest says, or
// tear it down when no manifest asks for it any more.
func (a *Agent) syncPod(ctx context.Context, uid string) time.Duration {
	began := a.cfg.Clock.Now()
	defer func() { a.metrics.ObserveSync(a.cfg.Clock.Since(began)) }()

	pod, last, data := a.desiredPod(uid)
	pr, err := a.rt.ObservePod(ctx, uid)
	if err != nil {
		a.log.Warn("observe pod", "uid", uid, "err", err)
		return a.cfg.ErrorRequeue
	}
	if pod == nil {
		return a.terminate(ctx, last, pr)
	}
	if msg := a.evictionOf(uid); msg != "" {
		return a.keepEvicted(ctx, pod, msg)
	}
	if r := a.admit(pod); r != nil {
		return a.keepRejected(ctx, pod, pr, r)
	}
	obs, err := a.rt.CollectGarbage(ctx, pr)
	if err != nil {
		a.log.Warn("collect garbage", "pod", podKey(pod), "err", err)
	}
	res := a.rt.SyncPod(ctx, pod, obs, data)
	if res.Err != nil {
		level := "warn"
		if kuberuntime.IsWaiting(res.Err) {
			level = "debug"
		}
		a.logSyncError(level, pod, res.Err)
	}
	if after, err := a.rt.ObservePod(ctx, uid); err == nil {
		obs = after.Observed
	}
	a.syncProbes(pod, obs)
	a.storeStatus(pod, a.computeStatus(pod, obs, res, false))
	if res.Err != nil {
		// A pod that only waits out a backoff is synced again when the
		// backoff ends, not every ErrorRequeue until then.
		if d := kuberuntime.RetryAfter(res.Err); d > a.cfg.ErrorRequeue {
			return d
		}
		return a.cfg.ErrorRequeue
	}
	return 0
}

func (a *Agent) logSyncError(level string, pod *corev1.Pod, err error) {
	if level == "debug" {
		a.log.Debug("pod is waiting", "pod", podKey(pod), "err", err)
		return
	}
	a.log.Warn("sync pod", "pod", podKey(pod), "err", err)
}

// terminate stops and removes a pod no manifest asks for. last is its last
// known spec, nil if the agent never saw one (it restarted meanwhile).
func (a *Agent) terminate(ctx context.Context, last *corev1.Pod, pr *kuberuntime.PodRuntime) time.Duration {
	uid := pr.UID
	if last != nil {
		if _, ok := a.store.Get(types.UID(uid)); ok {
			terminating := status.MarkTerminating(last, a.cfg.Clock.Now())
			a.store.Set(terminating, a.computeStatus(terminating, pr.Observed, noResult, true))
		}
	}
	if err := a.rt.TerminatePod(ctx, last, pr); err != nil {
		a.log.Warn("terminate pod", "uid", uid, "err", err)
		return a.cfg.ErrorRequeue
	}
	a.probes.RemovePod(uid)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.desired[uid] != nil {
		// The manifest came back while the pod was torn down: the next
		// sync starts it afresh, with its records as they are.
		return 0
	}
	a.store.Delete(types.UID(uid))
	if last != nil {
		for _, c := range append(last.Spec.InitContainers, last.Spec.Containers...) {
			a.metrics.ContainerRestarts.Delete(last.Namespace, last.Name, c.Name)
		}
	}
	delete(a.known, uid)
	delete(a.firstSeen, uid)
	delete(a.started, uid)
	delete(a.evicted, uid)
	delete(a.fresh, uid)
	a.forgetAdmission(uid)
	return 0
}

// keepRejected shows a pod the node did not admit as Failed, stopping
// whatever it may still run from before (an edit that no longer fits).
func (a *Agent) keepRejected(ctx context.Context, pod *corev1.Pod, pr *kuberuntime.PodRuntime, r *rejection) time.Duration {
	if err := a.rt.KillPod(ctx, pod, pr.Observed); err != nil {
		return a.cfg.ErrorRequeue
	}
	a.probes.RemovePod(string(pod.UID))
	st := a.computeStatus(pod, pr.Observed, noResult, false)
	st.Phase, st.Reason, st.Message = corev1.PodFailed, r.Reason, r.Message
	a.storeStatus(pod, st)
	return 0
}

// syncProbes points the prober at the pod's running containers.
func (a *Agent) syncProbes(pod *corev1.Pod, obs plan.Observed) {
	podIP := ""
	if len(obs.Sandboxes) > 0 && obs.Sandboxes[0].State == plan.SandboxReady {
		podIP = obs.Sandboxes[0].IP
	}
	running := map[string]prober.Running{}
	for _, c := range obs.Containers {
		if c.State != plan.ContainerRunning {
			continue
		}
		if _, dup := running[c.Name]; dup {
			continue // the newest comes first
		}
		running[c.Name] = prober.Running{ID: c.ID, StartedAt: c.StartedAt}
	}
	a.probes.Sync(pod, podIP, running)
}

func (a *Agent) computeStatus(pod *corev1.Pod, obs plan.Observed, res kuberuntime.SyncResult, terminating bool) corev1.PodStatus {
	uid := string(pod.UID)
	var previous *corev1.PodStatus
	if p, ok := a.store.Get(pod.UID); ok {
		previous = &p.Status
	}
	a.mu.Lock()
	startTime := a.firstSeen[uid]
	if a.fresh[uid] {
		// A new version of the pod: its status starts over, so that a
		// terminal phase of the old one does not stick.
		previous = nil
		delete(a.fresh, uid)
	}
	a.mu.Unlock()
	return status.Compute(status.Facts{
		Pod:          pod,
		Observed:     obs,
		Waiting:      a.rt.Waiting(uid),
		Ready:        a.probes.Ready,
		Started:      a.probes.Started,
		SandboxError: res.SandboxError,
		Messages:     a.terminationMessages(pod, obs),
		Previous:     previous,
		Terminating:  terminating,
		Now:          a.cfg.Clock.Now(),
		StartTime:    startTime,
		HostIP:       firstOrEmpty(a.cfg.PodConfig.HostIPs),
	})
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

// fingerprint sums up what a relist can see change in a pod.
func fingerprint(p *kuberuntime.PodRuntime) string {
	var b strings.Builder
	for _, s := range p.Observed.Sandboxes {
		fmt.Fprintf(&b, "s%s:%d:%s;", s.ID, s.State, s.IP)
	}
	ids := make([]string, 0, len(p.Observed.Containers))
	for _, c := range p.Observed.Containers {
		ids = append(ids, fmt.Sprintf("c%s:%d;", c.ID, c.State))
	}
	sort.Strings(ids)
	b.WriteString(strings.Join(ids, ""))
	return b.String()
}

func podEqual(a, b *corev1.Pod) bool {
	return equality.Semantic.DeepEqual(a.Spec, b.Spec) &&
		equality.Semantic.DeepEqual(a.Labels, b.Labels) &&
		equality.Semantic.DeepEqual(a.Annotations, b.Annotations)
}

func dataEqual(d kuberuntime.Data, snap source.Snapshot) bool {
	return equality.Semantic.DeepEqual(d.ConfigMaps, snap.ConfigMaps) &&
		equality.Semantic.DeepEqual(d.Secrets, snap.Secrets)
}

func podKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

func firstOrEmpty(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
