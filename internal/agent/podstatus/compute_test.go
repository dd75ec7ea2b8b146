package podstatus

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/plan"
	"github.com/crib-dev/crib/internal/agent/podstatus/podstatustest"
)

// The fixtures statuses are computed from, shared with statusapi's tests.
var (
	t0           = podstatustest.T0
	testPod      = podstatustest.Pod
	readySandbox = podstatustest.ReadySandbox
	ctr          = podstatustest.Ctr
	app          = podstatustest.App
	initC        = podstatustest.Init
)

// summary flattens a status into what the table cases assert.
type summary struct {
	Phase      corev1.PodPhase
	Conditions map[corev1.PodConditionType]string
	Init, Apps []string
}

func summarize(st corev1.PodStatus) summary {
	s := summary{Phase: st.Phase, Conditions: map[corev1.PodConditionType]string{}}
	for _, c := range st.Conditions {
		s.Conditions[c.Type] = string(c.Status) + "/" + c.Reason
	}
	s.Init = summarizeContainers(st.InitContainerStatuses)
	s.Apps = summarizeContainers(st.ContainerStatuses)
	return s
}

func summarizeContainers(list []corev1.ContainerStatus) []string {
	var out []string
	for _, cs := range list {
		var state string
		switch {
		case cs.State.Running != nil:
			state = "running"
		case cs.State.Terminated != nil:
			state = fmt.Sprintf("terminated:%s(%d)", cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
		case cs.State.Waiting != nil:
			state = "waiting:" + cs.State.Waiting.Reason
		}
		last := ""
		if t := cs.LastTerminationState.Terminated; t != nil {
			last = fmt.Sprintf(" last=%s(%d)", t.Reason, t.ExitCode)
		}
		out = append(out, fmt.Sprintf("%s %s restarts=%d ready=%t started=%t%s",
			cs.Name, state, cs.RestartCount, cs.Ready, cs.Started != nil && *cs.Started, last))
	}
	return out
}

// conds builds the expected condition map from four "Status/Reason"
// strings (ReadyToStart, Initialized, Ready, ContainersReady); PodScheduled
// is always True.
func conds(readyToStart, initialized, ready, containersReady string) map[corev1.PodConditionType]string {
	return map[corev1.PodConditionType]string{
		corev1.PodReadyToStartContainers: readyToStart,
		corev1.PodInitialized:            initialized,
		corev1.PodReady:                  ready,
		corev1.ContainersReady:           containersReady,
		corev1.PodScheduled:              "True/",
	}
}

const (
	notReady   = "False/" + ReasonContainersNotReady
	notInit    = "False/" + ReasonContainersNotInitialized
	completed  = "False/" + ReasonPodCompleted
	podFailed  = "False/" + ReasonPodFailed
	condTrue   = "True/"
	condFalse  = "False/"
	always     = corev1.RestartPolicyAlways
	onFailure  = corev1.RestartPolicyOnFailure
	never      = corev1.RestartPolicyNever
	running    = plan.ContainerRunning
	exited     = plan.ContainerExited
	created    = plan.ContainerCreated
	unknownCtr = plan.ContainerUnknown
)

func TestCompute(t *testing.T) {
	crash := map[string]Waiting{"app": {Reason: ReasonCrashLoopBackOff, Message: "back-off 20s restarting failed container=app pod=web_default(uid-1)"}}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		obs      plan.Observed
		waiting  map[string]Waiting
		ready    func(string) bool
		started  func(string) bool
		sbErr    string
		terminat bool
		want     summary
	}{
		{
			name: "nothing yet",
			pod:  testPod(always, nil, "app"),
			want: summary{Phase: corev1.PodPending, Conditions: conds(condFalse, condTrue, notReady, notReady),
				Apps: []string{"app waiting:ContainerCreating restarts=0 ready=false started=false"}},
		},
		{
			name: "sandbox up, init containers not started",
			pod:  testPod(always, []string{"i1", "i2"}, "app"),
			obs:  plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}},
			want: summary{Phase: corev1.PodPending, Conditions: conds(condTrue, notInit, notReady, notReady),
				Init: []string{"i1 waiting:PodInitializing restarts=0 ready=false started=false",
					"i2 waiting:PodInitializing restarts=0 ready=false started=false"},
				Apps: []string{"app waiting:PodInitializing restarts=0 ready=false started=false"}},
		},
		{
			name: "first init container running",
			pod:  testPod(always, []string{"i1", "i2"}, "app"),
			obs:  plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{initC("i1", running, 0, 0)}},
			want: summary{Phase: corev1.PodPending, Conditions: conds(condTrue, notInit, notReady, notReady),
				Init: []string{"i1 running restarts=0 ready=false started=true",
					"i2 waiting:PodInitializing restarts=0 ready=false started=false"},
				Apps: []string{"app waiting:PodInitializing restarts=0 ready=false started=false"}},
		},
		{
			name: "init done, app not created",
			pod:  testPod(always, []string{"i1"}, "app"),
			obs:  plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{initC("i1", exited, 0, 0)}},
			want: summary{Phase: corev1.PodPending, Conditions: conds(condTrue, condTrue, notReady, notReady),
				Init: []string{"i1 terminated:Completed(0) restarts=0 ready=true started=false"},
				Apps: []string{"app waiting:ContainerCreating restarts=0 ready=false started=false"}},
		},
		{
			name: "app created, not started",
			pod:  testPod(always, nil, "app"),
			obs:  plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{app("app", created, 0, 0)}},
			want: summary{Phase: corev1.PodPending, Conditions: conds(condTrue, condTrue, notReady, notReady),
				Apps: []string{"app waiting:ContainerCreating restarts=0 ready=false started=false"}},
		},
		{
			name: "running and ready",
			pod:  testPod(always, []string{"i1"}, "app"),
			obs: plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()},
				Containers: []plan.Container{app("app", running, 0, 0), initC("i1", exited, 0, 0)}},
			want: summary{Phase: corev1.PodRunning, Conditions: conds(condTrue, condTrue, condTrue, condTrue),
				Init: []string{"i1 terminated:Completed(0) restarts=0 ready=true started=false"},
				Apps: []string{"app running restarts=0 ready=true started=true"}},
		},
		{
			name:  "running, readiness probe failing",
			pod:   testPod(always, nil, "app", "side"),
			obs:   plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{app("app", running, 0, 0), app("side", running, 0, 0)}},
			ready: func(id string) bool { return id != "side-0" },
			want: summary{Phase: corev1.PodRunning, Conditions: conds(condTrue, condTrue, notReady, notReady),
				Apps: []string{"app running restarts=0 ready=true started=true", "side running restarts=0 ready=false started=true"}},
		},
		{
			name:    "running, startup probe not yet passed",
			pod:     testPod(always, nil, "app"),
			obs:     plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{app("app", running, 0, 0)}},
			started: func(string) bool { return false },
			want: summary{Phase: corev1.PodRunning, Conditions: conds(condTrue, condTrue, notReady, notReady),
				Apps: []string{"app running restarts=0 ready=false started=false"}},
		},
		{
			name: "always: exited with error, before the executor decides",
			pod:  testPod(always, nil, "app"),
			obs:  plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{app("app", exited, 0, 1)}},
			want: summary{Phase: corev1.PodRunning, Conditions: conds(condTrue, condTrue, notReady, notReady),
				Apps: []string{"app terminated:Error(1) restarts=0 ready=false started=false"}},
		},
		{
			name:    "always: crash loop back-off",
			pod:     testPod(always, nil, "app"),
			obs:     plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{app("app", exited, 3, 2), app("app", exited, 2, 2)}},
			waiting: crash,
			want: summary{Phase: corev1.PodRunning, Conditions: conds(condTrue, condTrue, notReady, notReady),
				Apps: []string{"app waiting:CrashLoopBackOff restarts=3 ready=false started=false last=Error(2)"}},
		},
		{
			name: "always: restarted, previous instance is the last termination",
			pod:  testPod(always, nil, "app"),
			obs: plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()},
				Containers: []plan.Container{app("app", exited, 1, 137), app("app", running, 2, 0), app("app", exited, 0, 1)}},
			want: summary{Phase: corev1.PodRunning, Conditions: conds(condTrue, condTrue, condTrue, condTrue),
				Apps: []string{"app running restarts=2 ready=true started=true last=Error(137)"}},
		},
		{
			name: "always: every container exited is still Running",
			pod:  testPod(always, nil, "app"),
			obs:  plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{app("app", exited, 0, 0)}},
			want: summary{Phase: corev1.PodRunning, Conditions: conds(condTrue, condTrue, notReady, notReady),
				Apps: []string{"app terminated:Completed(0) restarts=0 ready=false started=false"}},
		},
		{
			name: "never: succeeded",
			pod:  testPod(never, []string{"i1"}, "app", "b"),
			obs: plan.Observed{Containers: []plan.Container{
				initC("i1", exited, 0, 0), app("app", exited, 0, 0), app("b", exited, 0, 0)}},
			want: summary{Phase: corev1.PodSucceeded, Conditions: conds(condFalse, "True/"+ReasonPodCompleted, completed, completed),
				Init: []string{"i1 terminated:Completed(0) restarts=0 ready=true started=false"},
				Apps: []string{"app terminated:Completed(0) restarts=0 ready=false started=false",
					"b terminated:Completed(0) restarts=0 ready=false started=false"}},
		},
		{
			name: "never: failed",
			pod:  testPod(never, nil, "app", "b"),
			obs: plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()},
				Containers: []plan.Container{app("app", exited, 0, 0), app("b", exited, 0, 3)}},
			want: summary{Phase: corev1.PodFailed, Conditions: conds(condTrue, condTrue, podFailed, podFailed),
				Apps: []string{"app terminated:Completed(0) restarts=0 ready=false started=false",
					"b terminated:Error(3) restarts=0 ready=false started=false"}},
		},
		{
			name: "never: one still running",
			pod:  testPod(never, nil, "app", "b"),
			obs: plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()},
				Containers: []plan.Container{app("app", running, 0, 0), app("b", exited, 0, 3)}},
			want: summary{Phase: corev1.PodRunning, Conditions: conds(condTrue, condTrue, notReady, notReady),
				Apps: []string{"app running restarts=0 ready=true started=true",
					"b terminated:Error(3) restarts=0 ready=false started=false"}},
		},
		{
			name:    "never: a waiting reason does not hide a final exit",
			pod:     testPod(never, nil, "app"),
			obs:     plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{app("app", exited, 0, 1)}},
			waiting: crash,
			want: summary{Phase: corev1.PodFailed, Conditions: conds(condTrue, condTrue, podFailed, podFailed),
				Apps: []string{"app terminated:Error(1) restarts=0 ready=false started=false"}},
		},
		{
			name: "never: init container failed",
			pod:  testPod(never, []string{"i1", "i2"}, "app"),
			obs:  plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{initC("i1", exited, 0, 1)}},
			want: summary{Phase: corev1.PodFailed, Conditions: conds(condTrue, notInit, podFailed, podFailed),
				Init: []string{"i1 terminated:Error(1) restarts=0 ready=false started=false",
					"i2 waiting:PodInitializing restarts=0 ready=false started=false"},
				Apps: []string{"app waiting:PodInitializing restarts=0 ready=false started=false"}},
		},
		{
			name:    "on failure: init container crash loop",
			pod:     testPod(onFailure, []string{"i1"}, "app"),
			obs:     plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{initC("i1", exited, 1, 1)}},
			waiting: map[string]Waiting{"i1": {Reason: ReasonCrashLoopBackOff}},
			want: summary{Phase: corev1.PodPending, Conditions: conds(condTrue, notInit, notReady, notReady),
				Init: []string{"i1 waiting:CrashLoopBackOff restarts=1 ready=false started=false last=Error(1)"},
				Apps: []string{"app waiting:PodInitializing restarts=0 ready=false started=false"}},
		},
		{
			name: "on failure: succeeded",
			pod:  testPod(onFailure, nil, "app"),
			obs:  plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{app("app", exited, 0, 0)}},
			want: summary{Phase: corev1.PodSucceeded, Conditions: conds(condTrue, condTrue, completed, completed),
				Apps: []string{"app terminated:Completed(0) restarts=0 ready=false started=false"}},
		},
		{
			name: "on failure: failed container restarts",
			pod:  testPod(onFailure, nil, "app", "b"),
			obs: plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()},
				Containers: []plan.Container{app("app", exited, 0, 0), app("b", exited, 0, 1)}},
			want: summary{Phase: corev1.PodRunning, Conditions: conds(condTrue, condTrue, notReady, notReady),
				Apps: []string{"app terminated:Completed(0) restarts=0 ready=false started=false",
					"b terminated:Error(1) restarts=0 ready=false started=false"}},
		},
		{
			name: "oom killed",
			pod:  testPod(always, nil, "app"),
			obs: plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{func() plan.Container {
				c := app("app", exited, 0, 137)
				c.Reason = ReasonOOMKilled
				return c
			}()}},
			want: summary{Phase: corev1.PodRunning, Conditions: conds(condTrue, condTrue, notReady, notReady),
				Apps: []string{"app terminated:OOMKilled(137) restarts=0 ready=false started=false"}},
		},
		{
			name:    "image pull error before the container exists",
			pod:     testPod(always, nil, "app"),
			obs:     plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}},
			waiting: map[string]Waiting{"app": {Reason: "ErrImagePull", Message: "not found"}},
			want: summary{Phase: corev1.PodPending, Conditions: conds(condTrue, condTrue, notReady, notReady),
				Apps: []string{"app waiting:ErrImagePull restarts=0 ready=false started=false"}},
		},
		{
			name:    "a waiting reason never hides a running container",
			pod:     testPod(always, nil, "app"),
			obs:     plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{app("app", running, 0, 0)}},
			waiting: crash,
			want: summary{Phase: corev1.PodRunning, Conditions: conds(condTrue, condTrue, condTrue, condTrue),
				Apps: []string{"app running restarts=0 ready=true started=true"}},
		},
		{
			name:    "created container that failed to start",
			pod:     testPod(always, nil, "app"),
			obs:     plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{app("app", created, 1, 0), app("app", exited, 0, 2)}},
			waiting: map[string]Waiting{"app": {Reason: "RunContainerError", Message: "exec: not found"}},
			// It ran before, so it counts as restarting, as in the kubelet.
			want: summary{Phase: corev1.PodRunning, Conditions: conds(condTrue, condTrue, notReady, notReady),
				Apps: []string{"app waiting:RunContainerError restarts=1 ready=false started=false last=Error(2)"}},
		},
		{
			name: "unknown container state",
			pod:  testPod(always, nil, "app"),
			obs:  plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{app("app", unknownCtr, 0, 0)}},
			want: summary{Phase: corev1.PodPending, Conditions: conds(condTrue, condTrue, notReady, notReady),
				Apps: []string{"app waiting:ContainerStatusUnknown restarts=0 ready=false started=false"}},
		},
		{
			name:  "sandbox error",
			pod:   testPod(always, nil, "app"),
			sbErr: "setup network: no IP left",
			want: summary{Phase: corev1.PodPending, Conditions: conds(condFalse, condTrue, notReady, notReady),
				Apps: []string{"app waiting:ContainerCreating restarts=0 ready=false started=false"}},
		},
		{
			name: "sandbox died, containers with it",
			pod:  testPod(always, nil, "app"),
			obs: plan.Observed{Sandboxes: []plan.Sandbox{{ID: "sb1", State: plan.SandboxNotReady, CreatedAt: t0}},
				Containers: []plan.Container{app("app", exited, 0, 137)}},
			want: summary{Phase: corev1.PodRunning, Conditions: conds(condFalse, condTrue, notReady, notReady),
				Apps: []string{"app terminated:Error(137) restarts=0 ready=false started=false"}},
		},
		{
			name:     "terminating: nothing is ready",
			pod:      testPod(always, nil, "app"),
			obs:      plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{app("app", running, 0, 0)}},
			terminat: true,
			want: summary{Phase: corev1.PodRunning, Conditions: conds(condTrue, condTrue, notReady, notReady),
				Apps: []string{"app running restarts=0 ready=false started=true"}},
		},
		{
			name: "containers of another type with the same name are ignored",
			pod:  testPod(always, nil, "app"),
			obs:  plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{ctr("app", labels.TypeEphemeral, running, 0, 0)}},
			want: summary{Phase: corev1.PodPending, Conditions: conds(condTrue, condTrue, notReady, notReady),
				Apps: []string{"app waiting:ContainerCreating restarts=0 ready=false started=false"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := Compute(Facts{
				Pod: tc.pod, Observed: tc.obs, Waiting: tc.waiting, Ready: tc.ready, Started: tc.started,
				SandboxError: tc.sbErr, Terminating: tc.terminat, Now: t0, StartTime: t0,
			})
			if diff := cmp.Diff(tc.want, summarize(st)); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComputeDetails(t *testing.T) {
	pod := testPod(always, nil, "app")
	older := app("app", exited, 0, 1)
	older.Message = "runtime says bye"
	newest := app("app", exited, 1, 2)
	sb := readySandbox()
	sb.IPs = []string{"10.88.0.5", "fd00::5"}
	oldSB := plan.Sandbox{ID: "sb0", State: plan.SandboxNotReady, IP: "10.88.0.1", CreatedAt: t0.Add(-time.Hour)}
	back := "back-off 20s restarting failed container=app pod=web_default(uid-1)"
	st := Compute(Facts{
		Pod:       pod,
		Observed:  plan.Observed{Sandboxes: []plan.Sandbox{sb, oldSB}, Containers: []plan.Container{newest, older}},
		Waiting:   map[string]Waiting{"app": {Reason: ReasonCrashLoopBackOff, Message: back}},
		Messages:  map[string]string{"app": "disk full"},
		Now:       t0.Add(time.Hour),
		StartTime: t0,
		HostIP:    "192.168.1.2",
	})
	want := []corev1.ContainerStatus{{
		Name:  "app",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ReasonCrashLoopBackOff, Message: back}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 2, Reason: ReasonError, Message: "disk full",
			StartedAt: metav1.NewTime(newest.StartedAt), FinishedAt: metav1.NewTime(newest.FinishedAt),
			ContainerID: "crib://app-1",
		}},
		RestartCount: 1,
		Image:        "img-app",
		ImageID:      "sha256:app",
		ContainerID:  "crib://app-1",
		Started:      new(bool),
	}}
	if diff := cmp.Diff(want, st.ContainerStatuses); diff != "" {
		t.Errorf("container statuses (-want +got):\n%s", diff)
	}
	if st.PodIP != "10.88.0.5" || cmp.Diff([]corev1.PodIP{{IP: "10.88.0.5"}, {IP: "fd00::5"}}, st.PodIPs) != "" {
		t.Errorf("pod IPs = %q %v, want the newest ready sandbox's", st.PodIP, st.PodIPs)
	}
	if st.HostIP != "192.168.1.2" || len(st.HostIPs) != 1 || st.HostIPs[0].IP != "192.168.1.2" {
		t.Errorf("host IP = %q %v", st.HostIP, st.HostIPs)
	}
	if st.StartTime == nil || !st.StartTime.Time.Equal(t0) {
		t.Errorf("start time = %v, want %v", st.StartTime, t0)
	}
	if st.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("qos = %q", st.QOSClass)
	}
	for _, c := range st.Conditions {
		if !c.LastTransitionTime.Time.Equal(t0.Add(time.Hour)) {
			t.Errorf("condition %s transition time = %v, want now", c.Type, c.LastTransitionTime)
		}
	}
}

func TestComputeMessages(t *testing.T) {
	pod := testPod(never, nil, "app")
	c := app("app", exited, 0, 1)
	c.Message = "from the runtime"
	obs := plan.Observed{Containers: []plan.Container{c}}
	for _, tc := range []struct {
		name     string
		messages map[string]string
		want     string
	}{
		{"runtime message", nil, "from the runtime"},
		{"termination message file wins", map[string]string{"app": "from the file"}, "from the file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := Compute(Facts{Pod: pod, Observed: obs, Messages: tc.messages, Now: t0})
			if got := st.ContainerStatuses[0].State.Terminated.Message; got != tc.want {
				t.Errorf("message = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestComputePrevious(t *testing.T) {
	pod := testPod(never, nil, "app")
	runningObs := plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{app("app", running, 0, 0)}}
	first := Compute(Facts{Pod: pod, Observed: runningObs, Now: t0, StartTime: t0})

	t.Run("unchanged conditions keep their time", func(t *testing.T) {
		later := t0.Add(time.Minute)
		st := Compute(Facts{Pod: pod, Observed: runningObs, Previous: &first, Now: later, StartTime: later})
		for _, c := range st.Conditions {
			if !c.LastTransitionTime.Time.Equal(t0) {
				t.Errorf("%s: transition time = %v, want %v", c.Type, c.LastTransitionTime, t0)
			}
		}
		if !st.StartTime.Time.Equal(t0) {
			t.Errorf("start time = %v, want the first one", st.StartTime)
		}
	})
	t.Run("changed conditions get a new time", func(t *testing.T) {
		later := t0.Add(2 * time.Minute)
		st := Compute(Facts{Pod: pod, Observed: runningObs, Ready: func(string) bool { return false }, Previous: &first, Now: later})
		want := map[corev1.PodConditionType]time.Time{
			corev1.PodReadyToStartContainers: t0, corev1.PodInitialized: t0, corev1.PodScheduled: t0,
			corev1.PodReady: later, corev1.ContainersReady: later,
		}
		for _, c := range st.Conditions {
			if !c.LastTransitionTime.Time.Equal(want[c.Type]) {
				t.Errorf("%s: transition time = %v, want %v", c.Type, c.LastTransitionTime, want[c.Type])
			}
		}
	})
	t.Run("a terminal phase sticks", func(t *testing.T) {
		prev := corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "gone"}
		st := Compute(Facts{Pod: pod, Observed: runningObs, Previous: &prev, Now: t0})
		if st.Phase != corev1.PodFailed || st.Reason != "Evicted" || st.Message != "gone" {
			t.Errorf("phase = %s reason %q message %q, want Failed Evicted gone", st.Phase, st.Reason, st.Message)
		}
	})
}

func TestComputeConditionMessages(t *testing.T) {
	pod := testPod(always, []string{"i1", "i2"}, "a", "b")
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}}
	st := Compute(Facts{Pod: pod, SandboxError: "run sandbox: boom", Now: t0})
	got := map[corev1.PodConditionType]string{}
	for _, c := range st.Conditions {
		got[c.Type] = c.Message
	}
	want := map[corev1.PodConditionType]string{
		corev1.PodReadyToStartContainers: "run sandbox: boom",
		corev1.PodInitialized:            "containers with incomplete status: [i1 i2]",
		corev1.PodReady:                  "containers with unready status: [a b]",
		corev1.ContainersReady:           "containers with unready status: [a b]",
		corev1.PodScheduled:              "",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("condition messages (-want +got):\n%s", diff)
	}

	// Every container ready, but nobody sets the readiness gate's condition.
	pod = testPod(always, nil, "a")
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}}
	st = Compute(Facts{Pod: pod, Observed: plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()},
		Containers: []plan.Container{app("a", running, 0, 0)}}, Now: t0})
	for _, c := range st.Conditions {
		if c.Type == corev1.PodReady && (c.Status != corev1.ConditionFalse || c.Reason != ReasonReadinessGatesNotReady) {
			t.Errorf("Ready = %s/%s, want False/%s", c.Status, c.Reason, ReasonReadinessGatesNotReady)
		}
		if c.Type == corev1.ContainersReady && c.Status != corev1.ConditionTrue {
			t.Errorf("ContainersReady = %s, want True", c.Status)
		}
	}
}

func TestComputeSidecar(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := testPod(corev1.RestartPolicyAlways, []string{"proxy"}, "app")
	pod.Spec.InitContainers[0].RestartPolicy = &always
	obs := plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()},
		Containers: []plan.Container{initC("proxy", running, 0, 0)}}
	st := Compute(Facts{Pod: pod, Observed: obs, Now: t0})
	if diff := cmp.Diff(summary{Phase: corev1.PodPending, Conditions: conds(condTrue, condTrue, notReady, notReady),
		Init: []string{"proxy running restarts=0 ready=true started=true"},
		Apps: []string{"app waiting:ContainerCreating restarts=0 ready=false started=false"}}, summarize(st)); diff != "" {
		t.Errorf("sidecar started (-want +got):\n%s", diff)
	}
	obs.Containers = append(obs.Containers, app("app", running, 0, 0))
	st = Compute(Facts{Pod: pod, Observed: obs, Now: t0})
	if st.Phase != corev1.PodRunning {
		t.Errorf("phase = %s, want Running", st.Phase)
	}
}

func TestMarkTerminating(t *testing.T) {
	pod := testPod(always, nil, "app")
	grace := int64(30)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	got := MarkTerminating(pod, t0)
	if pod.DeletionTimestamp != nil {
		t.Fatal("MarkTerminating changed its argument")
	}
	if got.DeletionTimestamp == nil || !got.DeletionTimestamp.Time.Equal(t0) || *got.DeletionGracePeriodSeconds != 30 {
		t.Errorf("deletion = %v grace %v", got.DeletionTimestamp, got.DeletionGracePeriodSeconds)
	}
	again := MarkTerminating(got, t0.Add(time.Minute))
	if !again.DeletionTimestamp.Time.Equal(t0) {
		t.Errorf("a second mark moved the deletion time to %v", again.DeletionTimestamp)
	}
}

func TestComputeNilPod(t *testing.T) {
	if st := Compute(Facts{}); st.Phase != corev1.PodUnknown || len(st.Conditions) != 0 {
		t.Errorf("Compute(no pod) = %+v", st)
	}
}

func TestComputeWaitingReasons(t *testing.T) {
	exit0 := app("app", exited, 0, 0)
	exit1 := app("app", exited, 0, 1)
	for _, tc := range []struct {
		name   string
		policy corev1.RestartPolicy
		obs    []plan.Container
		reason string
		want   string // the state's waiting reason, or "terminated"
	}{
		{"pull error", always, nil, "ErrImagePull", "ErrImagePull"},
		{"pull back-off", always, nil, "ImagePullBackOff", "ImagePullBackOff"},
		{"config error", always, nil, "CreateContainerConfigError", "CreateContainerConfigError"},
		{"create error", onFailure, nil, "CreateContainerError", "CreateContainerError"},
		{"hook error", always, []plan.Container{exit1}, "PostStartHookError", "PostStartHookError"},
		{"back-off after failure, on failure", onFailure, []plan.Container{exit1}, ReasonCrashLoopBackOff, ReasonCrashLoopBackOff},
		{"no back-off after success, on failure", onFailure, []plan.Container{exit0}, ReasonCrashLoopBackOff, "terminated"},
		{"back-off after success, always", always, []plan.Container{exit0}, ReasonCrashLoopBackOff, ReasonCrashLoopBackOff},
		{"never restarts", never, []plan.Container{exit1}, ReasonCrashLoopBackOff, "terminated"},
		{"empty reason is ignored", always, nil, "", ReasonContainerCreating},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := Compute(Facts{
				Pod:      testPod(tc.policy, nil, "app"),
				Observed: plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: tc.obs},
				Waiting:  map[string]Waiting{"app": {Reason: tc.reason, Message: "why"}},
				Now:      t0,
			})
			cs := st.ContainerStatuses[0]
			got := "terminated"
			if cs.State.Waiting != nil {
				got = cs.State.Waiting.Reason
				if tc.reason != "" && cs.State.Waiting.Message != "why" {
					t.Errorf("message = %q", cs.State.Waiting.Message)
				}
			}
			if got != tc.want {
				t.Errorf("state = %s, want %s", got, tc.want)
			}
			if got != "terminated" && len(tc.obs) > 0 && cs.LastTerminationState.Terminated == nil {
				t.Errorf("the exited instance is not the last termination")
			}
		})
	}
}
