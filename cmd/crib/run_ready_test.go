package main

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestPodsReady(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	spec := &corev1.Pod{}
	spec.Namespace, spec.Name = "default", "web"
	spec.Spec.InitContainers = []corev1.Container{{Name: "init"}, {Name: "side", RestartPolicy: &always}}
	spec.Spec.Containers = []corev1.Container{{Name: "app"}, {Name: "db"}}

	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	st := func(name string, ready bool, state corev1.ContainerState) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Ready: ready, State: state}
	}
	waiting := func(reason, msg string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
	}
	exited := func(code int32, reason string) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}
	}
	initDone := st("init", false, exited(0, "Completed"))
	pod := func(phase corev1.PodPhase, inits []corev1.ContainerStatus, apps ...corev1.ContainerStatus) []corev1.Pod {
		p := spec.DeepCopy()
		p.Status = corev1.PodStatus{Phase: phase, InitContainerStatuses: inits, ContainerStatuses: apps}
		return []corev1.Pod{*p}
	}
	for _, tc := range []struct {
		name            string
		have            []corev1.Pod
		ready           bool
		notReady, fails string
	}{
		{name: "no status", notReady: "pod web has no status yet"},
		{name: "creating", have: pod(corev1.PodPending, []corev1.ContainerStatus{st("init", false, waiting("PodInitializing", "")), st("side", false, waiting("PodInitializing", ""))},
			st("app", false, waiting("PodInitializing", "")), st("db", false, waiting("PodInitializing", ""))),
			notReady: "container web/side is waiting: PodInitializing"},
		{name: "pulling", have: pod(corev1.PodPending, []corev1.ContainerStatus{initDone, st("side", true, running)},
			st("app", false, waiting("ContainerCreating", `Pulling image "x" (10%: 1 of 10 MB)`)), st("db", true, running)),
			notReady: `container web/app is waiting: ContainerCreating (Pulling image "x" (10%: 1 of 10 MB))`},
		{name: "probe not passed", have: pod(corev1.PodRunning, []corev1.ContainerStatus{initDone, st("side", true, running)},
			st("app", true, running), st("db", false, running)),
			notReady: "container web/db runs but has not passed its readiness probe"},
		{name: "sidecar not ready", have: pod(corev1.PodRunning, []corev1.ContainerStatus{initDone, st("side", false, running)},
			st("app", true, running), st("db", true, running)),
			notReady: "container web/side runs but has not passed its readiness probe"},
		{name: "ready", have: pod(corev1.PodRunning, []corev1.ContainerStatus{initDone, st("side", true, running)},
			st("app", true, running), st("db", true, running)), ready: true},
		{name: "init container failed", have: pod(corev1.PodPending, []corev1.ContainerStatus{st("init", false, exited(2, "Error"))}),
			fails: "init container web/init failed: Error, exit code 2"},
		{name: "app exited", have: pod(corev1.PodRunning, []corev1.ContainerStatus{initDone, st("side", true, running)},
			st("app", false, exited(0, "Completed")), st("db", true, running)),
			fails: "container web/app exited: Completed, exit code 0"},
		{name: "crash loop", have: func() []corev1.Pod {
			p := pod(corev1.PodRunning, []corev1.ContainerStatus{initDone, st("side", true, running)},
				st("app", true, running), st("db", false, waiting("CrashLoopBackOff", "back-off 10s")))
			p[0].Status.ContainerStatuses[1].RestartCount = 1
			p[0].Status.ContainerStatuses[1].LastTerminationState = exited(1, "Error")
			return p
		}(), fails: "container web/db restarted (Error, exit code 1)"},
		{name: "pull failed", have: pod(corev1.PodPending, []corev1.ContainerStatus{initDone, st("side", true, running)},
			st("app", false, waiting("ErrImagePull", "not found")), st("db", true, running)),
			fails: "container web/app: ErrImagePull: not found"},
		{name: "pod failed", have: pod(corev1.PodFailed, nil), fails: "pod web is Failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready, notReady, fails := podsReady([]*corev1.Pod{spec}, tc.have)
			if ready != tc.ready || notReady != tc.notReady || fails != tc.fails {
				t.Errorf("podsReady = %v, %q, %q; want %v, %q, %q", ready, notReady, fails, tc.ready, tc.notReady, tc.fails)
			}
		})
	}
}

func TestRunWaitFlag(t *testing.T) {
	var stdout, stderr strings.Builder
	if code := run([]string{"run", "--wait=running", "pod.yaml"}, &stdout, &stderr); code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), `--wait "running"`) {
		t.Errorf("stderr %q does not name the bad condition", stderr.String())
	}
}
