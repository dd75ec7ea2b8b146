package statusapi

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/agent/podstatus"
)

// WritePods prints pods the way `kubectl get pods -A -o wide` does, trimmed
// to NAMESPACE NAME READY STATUS RESTARTS AGE IP.
func WritePods(w io.Writer, pods *corev1.PodList, now time.Time) error {
	return writePods(w, pods, now, false)
}

// WritePodsWide is WritePods with a USERNS column: the block of host ids a
// pod with hostUsers: false holds ("FIRST+LENGTH"), "<pending>" while it
// holds none, "host" for a pod with the host's users.
func WritePodsWide(w io.Writer, pods *corev1.PodList, now time.Time) error {
	return writePods(w, pods, now, true)
}

func writePods(w io.Writer, pods *corev1.PodList, now time.Time, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	header := "NAMESPACE\tNAME\tREADY\tSTATUS\tRESTARTS\tAGE\tIP"
	if wide {
		header += "\tUSERNS"
	}
	fmt.Fprintln(tw, header)
	for i := range pods.Items {
		p := &pods.Items[i]
		row := podRow(p, now)
		ip := p.Status.PodIP
		if ip == "" {
			ip = "<none>"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t%s\t%s\t%s", p.Namespace, p.Name, row.ready, row.total,
			row.status, row.restarts, age(podAge(p), now), ip)
		if wide {
			fmt.Fprintf(tw, "\t%s", userNamespace(p))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// userNamespace is the USERNS column of a pod.
func userNamespace(p *corev1.Pod) string {
	if podconfig.HostUsers(p) {
		return "host"
	}
	if r := p.Annotations[labels.UserNamespace]; r != "" {
		return r
	}
	return "<pending>"
}

type podSummary struct {
	ready, total int
	status       string
	restarts     string
}

// podRow decides READY, STATUS and RESTARTS as kubectl does: the phase,
// replaced by the first unfinished init container's state, else by the
// state of any app container that is not running, else Terminating while
// the pod is being deleted.
func podRow(p *corev1.Pod, now time.Time) podSummary {
	s := podSummary{total: len(p.Spec.Containers), status: string(p.Status.Phase)}
	if p.Status.Reason != "" {
		s.status = p.Status.Reason
	}
	if s.status == "" {
		s.status = string(corev1.PodPending)
	}
	restarts := 0
	var lastRestart time.Time
	noteRestart := func(cs *corev1.ContainerStatus) {
		restarts += int(cs.RestartCount)
		if t := cs.LastTerminationState.Terminated; t != nil && t.FinishedAt.Time.After(lastRestart) {
			lastRestart = t.FinishedAt.Time
		}
	}

	sidecars := map[string]bool{}
	for i := range p.Spec.InitContainers {
		if podstatus.IsSidecar(&p.Spec.InitContainers[i]) {
			sidecars[p.Spec.InitContainers[i].Name] = true
			s.total++
		}
	}

	initializing := false
	for i := range p.Status.InitContainerStatuses {
		cs := &p.Status.InitContainerStatuses[i]
		noteRestart(cs)
		if sidecars[cs.Name] {
			if cs.Ready && cs.State.Running != nil {
				s.ready++
			}
			if cs.Started != nil && *cs.Started {
				continue
			}
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode == 0 {
			continue
		}
		initializing = true
		switch t, w := cs.State.Terminated, cs.State.Waiting; {
		case t != nil && t.Reason != "":
			s.status = "Init:" + t.Reason
		case t != nil && t.Signal != 0:
			s.status = fmt.Sprintf("Init:Signal:%d", t.Signal)
		case t != nil:
			s.status = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
		case w != nil && w.Reason != "" && w.Reason != podstatus.ReasonPodInitializing:
			s.status = "Init:" + withPullPercent(w)
		default:
			s.status = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		break
	}

	if !initializing {
		running := false
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := &p.Status.ContainerStatuses[i]
			noteRestart(cs)
			switch t, w := cs.State.Terminated, cs.State.Waiting; {
			case w != nil && w.Reason != "":
				s.status = withPullPercent(w)
			case t != nil && t.Reason != "":
				s.status = t.Reason
			case t != nil && t.Signal != 0:
				s.status = fmt.Sprintf("Signal:%d", t.Signal)
			case t != nil:
				s.status = fmt.Sprintf("ExitCode:%d", t.ExitCode)
			case cs.Ready && cs.State.Running != nil:
				running = true
				s.ready++
			}
		}
		if s.status == podstatus.ReasonCompleted && running {
			s.status = string(corev1.PodRunning)
			if !hasCondition(p, corev1.PodReady) {
				s.status = "NotReady"
			}
		}
	}
	if p.DeletionTimestamp != nil {
		s.status = "Terminating"
	}

	s.restarts = fmt.Sprint(restarts)
	if restarts > 0 && !lastRestart.IsZero() {
		s.restarts = fmt.Sprintf("%d (%s ago)", restarts, age(lastRestart, now))
	}
	return s
}

// withPullPercent is a waiting reason, followed by the pull's percent
// while the container waits for its image: "ContainerCreating (42%)".
func withPullPercent(w *corev1.ContainerStateWaiting) string {
	if pct, ok := podstatus.PullPercent(w.Message); ok {
		return w.Reason + " (" + pct + ")"
	}
	return w.Reason
}

func hasCondition(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// podAge is when the pod came to be: its creation time, else the time the
// agent first saw it.
func podAge(p *corev1.Pod) time.Time {
	if !p.CreationTimestamp.IsZero() {
		return p.CreationTimestamp.Time
	}
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	return time.Time{}
}

// age prints how long ago t was, as kubectl does (45s, 3m12s, 5h, 2d).
func age(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// WriteContainers prints one line per container of every pod, init
// containers first, for `crib ps`: CONTAINER (short ID) NAME POD STATE
// RESTARTS AGE IMAGE. A container the runtime never created shows "-" as
// its ID.
func WriteContainers(w io.Writer, pods *corev1.PodList, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "CONTAINER\tNAME\tPOD\tSTATE\tRESTARTS\tAGE\tIMAGE")
	for i := range pods.Items {
		p := &pods.Items[i]
		all := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
		restored := strings.Split(p.Annotations[labels.Restored], ",")
		for _, cs := range all {
			state, since := containerState(&cs)
			if slices.Contains(restored, cs.Name) {
				state += " (restored)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", ShortID(cs.ContainerID), cs.Name, p.Name,
				state, cs.RestartCount, since(now), cs.Image)
		}
	}
	return tw.Flush()
}

// ShortID returns the first 13 characters of a container ID without its
// scheme, as crictl prints them; "-" for none.
func ShortID(id string) string {
	if i := strings.Index(id, "://"); i >= 0 {
		id = id[i+3:]
	}
	if id == "" {
		return "-"
	}
	if len(id) > 13 {
		id = id[:13]
	}
	return id
}

// containerState names a container's state for `crib ps` and says how to
// print its age: since it started, for running and exited containers.
func containerState(cs *corev1.ContainerStatus) (string, func(time.Time) string) {
	none := func(time.Time) string { return "-" }
	since := func(t time.Time) func(time.Time) string {
		if t.IsZero() {
			return none
		}
		return func(now time.Time) string { return age(t, now) }
	}
	switch {
	case cs.State.Running != nil:
		return "Running", since(cs.State.Running.StartedAt.Time)
	case cs.State.Terminated != nil:
		t := cs.State.Terminated
		return fmt.Sprintf("Exited(%d):%s", t.ExitCode, t.Reason), since(t.StartedAt.Time)
	case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
		return "Waiting:" + cs.State.Waiting.Reason, none
	default:
		return "Waiting", none
	}
}
