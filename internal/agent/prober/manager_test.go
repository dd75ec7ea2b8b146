package prober

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	testingclock "k8s.io/utils/clock/testing"
)

// TestManagerHTTPReadiness drives a readiness probe end to end: a real HTTP
// server, the manager's Dial, a pod IP that changes on a later Sync, and an
// OnChange that reads the manager back (no deadlock).
func TestManagerHTTPReadiness(t *testing.T) {
	var healthy atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)

	fc := testingclock.NewFakeClock(t0)
	dialed := make(chan string, 16)
	var m *Manager
	ready := make(chan bool, 16)
	m = NewManager(Config{
		Clock: fc,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dialed <- addr
			var d net.Dialer
			return d.DialContext(ctx, network, srv.Listener.Addr().String())
		},
		OnChange: func(string) { ready <- m.Ready("c1") },
	})
	t.Cleanup(m.Stop)

	pod := testPod("u1", corev1.Container{Name: "app", ReadinessProbe: &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 5, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1,
	}})
	m.Sync(pod, "10.88.0.5", map[string]Running{"app": running("c1")})
	if got := <-dialed; got != "10.88.0.5:8080" {
		t.Fatalf("dialed %s, want the pod IP", got)
	}
	eventually(t, "the worker to wait", fc.HasWaiters)
	if m.Ready("c1") {
		t.Fatal("ready while the server answers 503")
	}

	healthy.Store(true)
	m.Sync(pod, "10.88.0.6", map[string]Running{"app": running("c1")})
	fc.Step(5 * time.Second)
	if got := <-dialed; got != "10.88.0.6:8080" {
		t.Fatalf("dialed %s, want the new pod IP", got)
	}
	if got := <-ready; !got {
		t.Fatal("OnChange saw the container not ready after a 200")
	}

	healthy.Store(false)
	eventually(t, "the worker to wait", fc.HasWaiters)
	fc.Step(5 * time.Second)
	if got := <-ready; got {
		t.Fatal("OnChange saw the container ready after a 503")
	}
}
