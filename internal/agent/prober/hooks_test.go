package prober

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	testingclock "k8s.io/utils/clock/testing"
)

func hookContainer(port int) *corev1.Container {
	return &corev1.Container{
		Name:  "app",
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}},
		Lifecycle: &corev1.Lifecycle{
			PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"warm", "up"}}},
			PreStop:   &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromString("http")}},
		},
	}
}

func TestRunHandlerExec(t *testing.T) {
	pod := testPod("u1")
	c := hookContainer(80)
	fe := newFakeExec()
	if err := RunHandler(context.Background(), fe, pod, c, "c1", "10.0.0.1", c.Lifecycle.PostStart); err != nil {
		t.Fatal(err)
	}
	want := execCall{containerID: "c1", cmd: "warm up", timeout: 0}
	if len(fe.calls) != 1 || fe.calls[0] != want {
		t.Fatalf("calls %+v, want [%+v]", fe.calls, want)
	}

	fe.set("warm", exitError{4})
	fe.output = "cache missing"
	err := RunHandler(context.Background(), fe, pod, c, "c1", "10.0.0.1", c.Lifecycle.PostStart)
	var he *HookError
	if !errors.As(err, &he) {
		t.Fatalf("error %v is not a HookError", err)
	}
	var exit exitError
	if !errors.As(err, &exit) || exit.code != 4 {
		t.Errorf("error %v does not carry the exit status", err)
	}
	if he.Hook != "PostStart" || he.Reason() != "FailedPostStartHook" {
		t.Errorf("hook %q reason %q, want PostStart FailedPostStartHook", he.Hook, he.Reason())
	}
	for _, part := range []string{"PostStart", `"app"`, `"default/web"`, "warm up", "cache missing"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("message %q does not name %s", err, part)
		}
	}

	if err := RunHandler(context.Background(), nil, pod, c, "c1", "", c.Lifecycle.PostStart); !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Errorf("exec without a runtime: %v, want failed precondition", err)
	}
}

func TestRunHandlerHTTP(t *testing.T) {
	srv, reqs := probeServer(t, false)
	ip, port := hostPort(t, srv.Listener.Addr().String())
	pod := testPod("u1")
	c := hookContainer(port)

	if err := RunHandler(context.Background(), nil, pod, c, "c1", ip, c.Lifecycle.PreStop, WithUserAgent("crib/test")); err != nil {
		t.Fatal(err)
	}
	if r := <-reqs; r.URL.Path != "/ok" || r.UserAgent() != "crib/test" {
		t.Errorf("request %s with agent %q", r.URL.Path, r.UserAgent())
	}

	for _, tc := range []struct {
		name   string
		action *corev1.HTTPGetAction
		msgHas string
	}{
		{"500", &corev1.HTTPGetAction{Path: "/bad", Port: intstr.FromInt32(int32(port))}, "status 500"},
		{"unknown port", &corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromString("admin")}, `"admin"`},
		{"nothing listening", &corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromInt32(1)}, "http GET http://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := hookContainer(port)
			c.Lifecycle.PreStop = &corev1.LifecycleHandler{HTTPGet: tc.action}
			err := RunHandler(context.Background(), nil, pod, c, "c1", ip, c.Lifecycle.PreStop)
			var he *HookError
			if !errors.As(err, &he) || he.Reason() != "FailedPreStopHook" {
				t.Fatalf("error %v, want a PreStop HookError", err)
			}
			if !strings.Contains(err.Error(), tc.msgHas) {
				t.Errorf("message %q does not contain %q", err, tc.msgHas)
			}
		})
	}
}

func TestRunHandlerSleep(t *testing.T) {
	pod := testPod("u1")
	c := hookContainer(80)
	h := &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}
	c.Lifecycle.PreStop = h

	fc := testingclock.NewFakeClock(t0)
	done := make(chan error, 1)
	go func() { done <- RunHandler(context.Background(), nil, pod, c, "c1", "", h, WithClock(fc)) }()
	eventually(t, "the sleep to start", fc.HasWaiters)
	fc.Step(4 * time.Second)
	select {
	case err := <-done:
		t.Fatalf("sleep ended after 4s of 5: %v", err)
	default:
	}
	fc.Step(time.Second)
	eventually(t, "the sleep to end", func() bool { return len(done) == 1 })
	if err := <-done; err != nil {
		t.Fatalf("sleep: %v", err)
	}

	// A cancelled context cuts the sleep short with an error.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- RunHandler(ctx, nil, pod, c, "c1", "", h, WithClock(fc)) }()
	eventually(t, "the sleep to start", fc.HasWaiters)
	cancel()
	eventually(t, "the sleep to end", func() bool { return len(done) == 1 })
	err := <-done
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "PreStop") {
		t.Fatalf("cancelled sleep: %v", err)
	}
	if fc.HasWaiters() {
		t.Error("the sleep's timer was left armed")
	}
}

func TestRunHandlerRejects(t *testing.T) {
	pod := testPod("u1")
	c := hookContainer(80)
	for _, tc := range []struct {
		name string
		h    *corev1.LifecycleHandler
	}{
		{"tcpSocket", &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}},
		{"empty", &corev1.LifecycleHandler{}},
		{"exec without command", &corev1.LifecycleHandler{Exec: &corev1.ExecAction{}}},
		{"nil", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := RunHandler(context.Background(), newFakeExec(), pod, c, "c1", "", tc.h)
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Errorf("error %v, want invalid argument", err)
			}
		})
	}
}

func TestManagerRunHandlerUsesConfig(t *testing.T) {
	h := newHarness(t)
	c := hookContainer(80)
	c.Lifecycle.PreStop = &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 2}}
	pod := testPod("u1", *c)
	if err := h.m.RunHandler(context.Background(), pod, c, "c1", "", c.Lifecycle.PostStart); err != nil {
		t.Fatal(err)
	}
	if got := h.exec.callsFor("c1"); got != 1 {
		t.Fatalf("exec ran %d times through the manager's runtime, want 1", got)
	}
	done := make(chan error, 1)
	go func() { done <- h.m.RunHandler(context.Background(), pod, c, "c1", "", c.Lifecycle.PreStop) }()
	eventually(t, "the sleep to start", h.clock.HasWaiters)
	h.clock.Step(2 * time.Second)
	eventually(t, "the sleep to end", func() bool { return len(done) == 1 })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
