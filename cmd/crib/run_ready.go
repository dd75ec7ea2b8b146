package main

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/podstatus"
)

// DefaultReadyTimeout is how long `crib run --wait=ready` waits for the
// pod by default: long enough for a pull of a large image over a slow
// link, short enough that a pod that never gets ready is reported.
const DefaultReadyTimeout = 5 * time.Minute

// readyWait is what --wait=ready asks of watchRun.
type readyWait struct {
	// deadline fails the wait when passed; zero waits forever.
	deadline time.Time
	timeout  time.Duration
	// foreground keeps `crib run` running once the pod is ready, as the
	// main process of a systemd unit must (NOTIFY_SOCKET is set);
	// otherwise it returns 0 and leaves the pod running.
	foreground bool
}

// podsReady decides whether the pods of the manifest are ready as the
// kubelet's Ready condition says: every app container (and every sidecar)
// running and ready, a container without a readiness probe being ready
// once it runs. It returns why not (the first container that is not), or,
// when a pod cannot become ready without something going wrong first (a
// container exited, failed to start or to pull, the pod ended), that
// failure.
func podsReady(want []*corev1.Pod, have []corev1.Pod) (ready bool, notReady, failed string) {
	byName := map[string]*corev1.Pod{}
	for i := range have {
		byName[have[i].Namespace+"/"+have[i].Name] = &have[i]
	}
	for _, w := range want {
		key := w.Namespace + "/" + w.Name
		p := byName[key]
		if p == nil {
			return false, fmt.Sprintf("pod %s has no status yet", w.Name), ""
		}
		switch p.Status.Phase {
		case corev1.PodFailed, corev1.PodSucceeded:
			return false, "", fmt.Sprintf("pod %s is %s", w.Name, p.Status.Phase)
		}
		sidecars := map[string]bool{}
		for i := range w.Spec.InitContainers {
			c := &w.Spec.InitContainers[i]
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				sidecars[c.Name] = true
			}
		}
		for _, cs := range p.Status.InitContainerStatuses {
			if sidecars[cs.Name] {
				continue // judged below, with the app containers
			}
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
				return false, "", fmt.Sprintf("init container %s/%s failed: %s", w.Name, cs.Name, terminated(t))
			}
			if why := waitingFailure(cs.State.Waiting); why != "" {
				return false, "", fmt.Sprintf("init container %s/%s: %s", w.Name, cs.Name, why)
			}
		}
		statuses := map[string]corev1.ContainerStatus{}
		for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			statuses[cs.Name] = cs
		}
		names := []string{}
		for i := range w.Spec.InitContainers {
			if sidecars[w.Spec.InitContainers[i].Name] {
				names = append(names, w.Spec.InitContainers[i].Name)
			}
		}
		for i := range w.Spec.Containers {
			names = append(names, w.Spec.Containers[i].Name)
		}
		for _, name := range names {
			cs, ok := statuses[name]
			switch {
			case !ok:
				if notReady == "" {
					notReady = fmt.Sprintf("container %s/%s has no status yet", w.Name, name)
				}
				continue
			case cs.State.Terminated != nil:
				return false, "", fmt.Sprintf("container %s/%s exited: %s", w.Name, name, terminated(cs.State.Terminated))
			case cs.RestartCount > 0:
				t := cs.LastTerminationState.Terminated
				why := "it exited"
				if t != nil {
					why = terminated(t)
				}
				return false, "", fmt.Sprintf("container %s/%s restarted (%s)", w.Name, name, why)
			}
			if why := waitingFailure(cs.State.Waiting); why != "" {
				return false, "", fmt.Sprintf("container %s/%s: %s", w.Name, name, why)
			}
			if notReady != "" || cs.Ready {
				continue
			}
			switch {
			case cs.State.Running != nil:
				notReady = fmt.Sprintf("container %s/%s runs but has not passed its readiness probe", w.Name, name)
			case cs.State.Waiting != nil && cs.State.Waiting.Message != "":
				notReady = fmt.Sprintf("container %s/%s is waiting: %s (%s)", w.Name, name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
			case cs.State.Waiting != nil:
				notReady = fmt.Sprintf("container %s/%s is waiting: %s", w.Name, name, cs.State.Waiting.Reason)
			default:
				notReady = fmt.Sprintf("container %s/%s is not ready", w.Name, name)
			}
		}
	}
	return notReady == "", notReady, ""
}

// waitingFailure says why a waiting container failed, or "" when it only
// waits to be created.
func waitingFailure(w *corev1.ContainerStateWaiting) string {
	if w == nil {
		return ""
	}
	switch w.Reason {
	case "", podstatus.ReasonContainerCreating, podstatus.ReasonPodInitializing:
		return ""
	}
	if w.Message == "" {
		return w.Reason
	}
	return w.Reason + ": " + w.Message
}

func terminated(t *corev1.ContainerStateTerminated) string {
	reason := t.Reason
	if reason == "" {
		reason = "exited"
	}
	return fmt.Sprintf("%s, exit code %d", reason, t.ExitCode)
}
