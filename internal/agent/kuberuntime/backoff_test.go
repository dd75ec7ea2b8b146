package kuberuntime

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestCrashLoopBackoff(t *testing.T) {
	e := newEnv(t)
	pod := testPod()
	e.mustSync(pod)
	uid := string(pod.UID)
	createsSince := func(mark int) []string { return withPrefix(e.log.since(mark), "CreateContainer") }

	// First crash: restarted at once.
	e.rt.exit(t, e.running(pod, "app").ID, 1, e.clk.Now())
	mark := e.log.len()
	e.mustSync(pod)
	if got, want := createsSince(mark), []string{"CreateContainer:app:1"}; !cmp.Equal(got, want) {
		t.Fatalf("after the first crash creates = %v, want %v", got, want)
	}

	// Second crash: held back 10s from its exit.
	e.rt.exit(t, e.running(pod, "app").ID, 1, e.clk.Now())
	for _, step := range []time.Duration{0, 9 * time.Second} {
		e.clk.Step(step)
		mark = e.log.len()
		res := e.sync(pod)
		if got := createsSince(mark); len(got) != 0 {
			t.Fatalf("%v after the second crash: created %v, want none in backoff", step, got)
		}
		if !IsWaiting(res.Err) {
			t.Errorf("SyncPod err in backoff = %v, want a waiting error", res.Err)
		}
		if w := e.waitingOf(uid)["app"]; w.Reason != reasonCrashLoopBackOff {
			t.Fatalf("Waiting[app] in backoff = %+v, want %s", w, reasonCrashLoopBackOff)
		}
	}
	e.clk.Step(2 * time.Second)
	mark = e.log.len()
	e.mustSync(pod)
	if got, want := createsSince(mark), []string{"CreateContainer:app:2"}; !cmp.Equal(got, want) {
		t.Fatalf("past the backoff creates = %v, want %v", got, want)
	}
	if w, ok := e.waitingOf(uid)["app"]; ok {
		t.Errorf("Waiting[app] after the restart = %+v, want none", w)
	}

	// Third crash: the delay doubled to 20s.
	e.rt.exit(t, e.running(pod, "app").ID, 1, e.clk.Now())
	e.clk.Step(15 * time.Second)
	mark = e.log.len()
	e.sync(pod)
	if got := createsSince(mark); len(got) != 0 {
		t.Fatalf("15s into a 20s backoff: created %v", got)
	}
	e.clk.Step(6 * time.Second)
	mark = e.log.len()
	e.mustSync(pod)
	if got, want := createsSince(mark), []string{"CreateContainer:app:3"}; !cmp.Equal(got, want) {
		t.Fatalf("past the doubled backoff creates = %v, want %v", got, want)
	}
}

func TestExitedContainerRestartPolicies(t *testing.T) {
	tests := []struct {
		policy      corev1.RestartPolicy
		code        int32
		wantRestart bool
	}{
		{corev1.RestartPolicyAlways, 0, true},
		{corev1.RestartPolicyAlways, 1, true},
		{corev1.RestartPolicyOnFailure, 0, false},
		{corev1.RestartPolicyOnFailure, 1, true},
		{corev1.RestartPolicyNever, 0, false},
		{corev1.RestartPolicyNever, 1, false},
	}
	for _, tc := range tests {
		t.Run(string(tc.policy)+"/"+string(rune('0'+tc.code)), func(t *testing.T) {
			e := newEnv(t)
			pod := testPod(func(p *corev1.Pod) { p.Spec.RestartPolicy = tc.policy })
			e.mustSync(pod)
			e.rt.exit(t, e.running(pod, "app").ID, tc.code, e.clk.Now())
			mark := e.log.len()
			e.sync(pod)
			got := len(withPrefix(e.log.since(mark), "CreateContainer")) > 0
			if got != tc.wantRestart {
				t.Errorf("restarted = %v, want %v (calls %v)", got, tc.wantRestart, e.log.since(mark))
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	wait := func(d time.Duration) error { return &waitError{msg: "waiting", left: d} }
	tests := []struct {
		name string
		err  error
		want time.Duration
	}{
		{"nil", nil, 0},
		{"one wait", wait(7 * time.Second), 7 * time.Second},
		{"the shortest of several", errors.Join(wait(9*time.Second), wait(3*time.Second)), 3 * time.Second},
		{"a failure beside a wait retries soon", errors.Join(wait(9*time.Second), errors.New("create failed")), 0},
		{"a wait of unknown length", fmt.Errorf("never pull: %w", errWaiting), 0},
		{"a wrapped wait", fmt.Errorf("container app: %w", wait(5*time.Second)), 5 * time.Second},
	}
	for _, tt := range tests {
		if got := RetryAfter(tt.err); got != tt.want {
			t.Errorf("%s: RetryAfter = %v, want %v", tt.name, got, tt.want)
		}
		if tt.want > 0 && !IsWaiting(tt.err) {
			t.Errorf("%s: IsWaiting = false", tt.name)
		}
	}
}
