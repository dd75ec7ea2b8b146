package podstatus

import (
	corev1 "k8s.io/api/core/v1"
)

// phase is the kubelet's getPhase for a standalone (static) pod: it never
// forces a terminal phase, it derives one from the containers and the
// restart policy.
func phase(pod *corev1.Pod, inits, apps []corev1.ContainerStatus) corev1.PodPhase {
	spec := &pod.Spec
	pendingInit, failedInit, pendingSidecar := 0, 0, 0
	var running, waiting, stopped, succeeded int

	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		cs, ok := find(inits, c.Name)
		if IsSidecar(c) {
			switch {
			case !ok:
				pendingSidecar++
			case cs.State.Running != nil:
				running++
				if cs.Started == nil || !*cs.Started {
					pendingSidecar++
				}
			case cs.State.Waiting != nil && cs.LastTerminationState.Terminated == nil:
				pendingSidecar++
				waiting++
			}
			continue
		}
		switch {
		case !ok:
			pendingInit++
		case cs.State.Terminated != nil:
			if cs.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			if cs.LastTerminationState.Terminated.ExitCode != 0 {
				failedInit++
			}
		default:
			pendingInit++
		}
	}

	for i := range spec.Containers {
		cs, ok := find(apps, spec.Containers[i].Name)
		switch {
		case !ok:
			waiting++
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			// Waiting to restart after it ended: it counts as stopped.
			stopped++
		default:
			waiting++
		}
	}

	if failedInit > 0 && spec.RestartPolicy == corev1.RestartPolicyNever {
		return corev1.PodFailed
	}
	appStarted := hasAppStarted(apps)
	switch {
	case pendingInit > 0 || (pendingSidecar > 0 && !appStarted) || waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0:
		switch {
		case spec.RestartPolicy == corev1.RestartPolicyAlways:
			return corev1.PodRunning // every container is on its way back
		case stopped == succeeded:
			return corev1.PodSucceeded
		case spec.RestartPolicy == corev1.RestartPolicyNever:
			return corev1.PodFailed
		default:
			return corev1.PodRunning // OnFailure restarts the failed ones
		}
	default:
		return corev1.PodPending
	}
}

// hasAppStarted says whether an app container runs or ever ran.
func hasAppStarted(apps []corev1.ContainerStatus) bool {
	for _, cs := range apps {
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			return true
		}
	}
	return false
}

func find(list []corev1.ContainerStatus, name string) (corev1.ContainerStatus, bool) {
	for _, cs := range list {
		if cs.Name == name {
			return cs, true
		}
	}
	return corev1.ContainerStatus{}, false
}
