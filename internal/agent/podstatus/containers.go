package podstatus

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/plan"
)

// instances returns the runtime's containers for one spec container, newest
// first. Names are unique across init and app containers of a pod, so the
// name decides; the type label, when present, must agree.
func instances(obs plan.Observed, name string, isInit bool) []plan.Container {
	want := labels.TypeApp
	if isInit {
		want = labels.TypeInit
	}
	var out []plan.Container
	for _, c := range obs.Containers {
		if c.Name != name || (c.Type != "" && c.Type != want) {
			continue
		}
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].Attempt > out[j].Attempt
	})
	return out
}

// initContainersDone says whether every init container has done its part:
// a regular one exited 0, a restartable one (sidecar) started. A pod whose
// app containers ever ran was initialized before, whatever its init
// containers do now.
func initContainersDone(f Facts) bool {
	for _, c := range f.Pod.Spec.Containers {
		if len(instances(f.Observed, c.Name, false)) > 0 {
			return true
		}
	}
	for _, c := range f.Pod.Spec.InitContainers {
		inst := instances(f.Observed, c.Name, true)
		if len(inst) == 0 {
			return false
		}
		n := inst[0]
		if IsSidecar(&c) {
			if n.State != plan.ContainerRunning || !probe(f.Started, n.ID) {
				return false
			}
			continue
		}
		if n.State != plan.ContainerExited || n.ExitCode != 0 {
			return false
		}
	}
	return true
}

// IsSidecar reports a sidecar: an init container that keeps running
// beside the app containers.
func IsSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func probe(fn func(string) bool, id string) bool {
	if fn == nil {
		return true
	}
	return fn(id)
}

// containerStatuses renders one status per spec container, in spec order.
func containerStatuses(f Facts, specs []corev1.Container, isInit, initDone bool) []corev1.ContainerStatus {
	if len(specs) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, 0, len(specs))
	for i := range specs {
		out = append(out, containerStatus(f, &specs[i], isInit, initDone))
	}
	return out
}

func containerStatus(f Facts, spec *corev1.Container, isInit, initDone bool) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{Name: spec.Name, Image: spec.Image, Started: new(bool)}
	inst := instances(f.Observed, spec.Name, isInit)
	w, hasWaiting := f.Waiting[spec.Name]

	if len(inst) > 0 {
		fillResources(f, spec, isInit, &inst[0], &cs)
	} else {
		fillResources(f, spec, isInit, nil, &cs)
	}

	if len(inst) == 0 {
		// As in the kubelet, a pod with init containers shows
		// PodInitializing for containers not created yet (kubectl prints
		// Init:0/N); an app container switches to ContainerCreating once
		// the init containers are done.
		reason := ReasonContainerCreating
		if len(f.Pod.Spec.InitContainers) > 0 && (isInit || !initDone) {
			reason = ReasonPodInitializing
		}
		waiting := &corev1.ContainerStateWaiting{Reason: reason}
		if hasWaiting && w.Reason != "" {
			waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
		}
		cs.State.Waiting = waiting
		return cs
	}

	newest := inst[0]
	cs.ContainerID = ContainerIDScheme + newest.ID
	cs.RestartCount = int32(newest.Attempt)
	if newest.Image != "" {
		cs.Image = newest.Image
	}
	cs.ImageID = newest.ImageRef
	cs.State = instanceState(newest, f.Messages[spec.Name])
	if len(inst) > 1 && inst[1].State == plan.ContainerExited {
		cs.LastTerminationState = instanceState(inst[1], "")
	}

	if hasWaiting && w.Reason != "" && waitingApplies(f.Pod, spec, isInit, newest) {
		if newest.State == plan.ContainerExited {
			// The instance that ended is the last termination now; the
			// container waits for its next start.
			cs.LastTerminationState = cs.State
		}
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}}
	}

	running := cs.State.Running != nil
	*cs.Started = running && probe(f.Started, newest.ID)
	switch {
	case f.Terminating:
		cs.Ready = false
	case isInit && !IsSidecar(spec):
		// A regular init container is ready once it has succeeded.
		cs.Ready = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
	default:
		cs.Ready = running && *cs.Started && probe(f.Ready, newest.ID)
	}
	return cs
}

// waitingApplies says whether the executor's waiting reason describes the
// container: not while it runs, and not when its instance ended for good.
func waitingApplies(pod *corev1.Pod, spec *corev1.Container, isInit bool, newest plan.Container) bool {
	switch newest.State {
	case plan.ContainerRunning:
		return false
	case plan.ContainerExited:
		return willRestart(pod, spec, isInit, newest.ExitCode)
	default:
		return true
	}
}

// willRestart applies the restart policy to an exited container.
func willRestart(pod *corev1.Pod, spec *corev1.Container, isInit bool, exitCode int32) bool {
	if isInit {
		if IsSidecar(spec) {
			return true
		}
		return exitCode != 0 && pod.Spec.RestartPolicy != corev1.RestartPolicyNever
	}
	switch pod.Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	default:
		return true
	}
}

// instanceState renders one runtime container as a ContainerState.
func instanceState(c plan.Container, message string) corev1.ContainerState {
	switch c.State {
	case plan.ContainerRunning:
		return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: apiTime(c.StartedAt)}}
	case plan.ContainerExited:
		reason := c.Reason
		if reason == "" {
			reason = ReasonCompleted
			if c.ExitCode != 0 {
				reason = ReasonError
			}
		}
		if message == "" {
			message = c.Message
		}
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode:    c.ExitCode,
			Reason:      reason,
			Message:     message,
			StartedAt:   apiTime(c.StartedAt),
			FinishedAt:  apiTime(c.FinishedAt),
			ContainerID: ContainerIDScheme + c.ID,
		}}
	case plan.ContainerCreated:
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ReasonContainerCreating}}
	default:
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason:  ReasonContainerStatusUnknown,
			Message: "the runtime cannot tell the container's state",
		}}
	}
}

func apiTime(t time.Time) metav1.Time {
	if t.IsZero() {
		return metav1.Time{}
	}
	return metav1.NewTime(t)
}
