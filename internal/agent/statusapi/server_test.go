package statusapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func testAPI(t *testing.T, opts ...HandlerOption) (*httptest.Server, *Store, *Events, *Metrics) {
	t.Helper()
	store := NewStore()
	store.Set(namedPod("default", "web", "u1"), corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.88.0.5"})
	store.Set(namedPod("default", "job", "u2"), corev1.PodStatus{Phase: corev1.PodSucceeded})
	store.SetSourceErrors([]SourceError{{Path: "/etc/crib/pods/bad.yaml", Message: `unknown field "spec.foo"`}})
	events := NewEvents(EventsConfig{Clock: clocktesting.NewFakeClock(t0), Logger: slog.New(slog.DiscardHandler)})
	events.Event(namedPod("default", "web", "u1"), corev1.EventTypeNormal, "Started", "started container app")
	metrics := NewMetrics()
	metrics.ProbeResult("readiness", "success")
	srv := httptest.NewServer(Handler(store, events, metrics, opts...))
	t.Cleanup(srv.Close)
	return srv, store, events, metrics
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func TestHandler(t *testing.T) {
	srv, _, _, _ := testAPI(t)
	t.Run("pods", func(t *testing.T) {
		resp, body := get(t, srv.URL+"/pods")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("status %d type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var list corev1.PodList
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatal(err)
		}
		if list.Kind != "PodList" || len(list.Items) != 2 || list.Items[0].Name != "job" ||
			list.Items[1].Status.PodIP != "10.88.0.5" {
			t.Errorf("pods = %s", body)
		}
	})
	t.Run("one pod", func(t *testing.T) {
		resp, body := get(t, srv.URL+"/pods/default/web")
		var pod corev1.Pod
		if err := json.Unmarshal(body, &pod); err != nil || resp.StatusCode != 200 {
			t.Fatalf("status %d: %v", resp.StatusCode, err)
		}
		if pod.Kind != "Pod" || pod.UID != "u1" || pod.Status.Phase != corev1.PodRunning {
			t.Errorf("pod = %s", body)
		}
	})
	t.Run("events", func(t *testing.T) {
		_, body := get(t, srv.URL+"/events")
		var list corev1.EventList
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 || list.Items[0].Reason != "Started" {
			t.Errorf("events = %s", body)
		}
	})
	t.Run("manifests", func(t *testing.T) {
		_, body := get(t, srv.URL+"/manifests")
		var errs []SourceError
		if err := json.Unmarshal(body, &errs); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]SourceError{{Path: "/etc/crib/pods/bad.yaml", Message: `unknown field "spec.foo"`}}, errs); diff != "" {
			t.Errorf("manifests (-want +got):\n%s", diff)
		}
	})
	t.Run("healthz", func(t *testing.T) {
		resp, body := get(t, srv.URL+"/healthz")
		if resp.StatusCode != 200 || string(body) != "ok" {
			t.Errorf("healthz = %d %q", resp.StatusCode, body)
		}
	})
	t.Run("metrics", func(t *testing.T) {
		resp, body := get(t, srv.URL+"/metrics")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != TextContentType {
			t.Fatalf("status %d type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		_, samples := parseText(t, string(body))
		got := map[string]float64{}
		for _, s := range samples {
			got[key(s)] = s.value
		}
		for k, v := range map[string]float64{
			"crib_agent_pods{phase=Running}":                                      1,
			"crib_agent_pods{phase=Succeeded}":                                    1,
			"crib_agent_pods{phase=Pending}":                                      0,
			"crib_agent_manifest_errors{}":                                        1,
			"crib_agent_probe_results_total{probe_type=readiness,result=success}": 1,
		} {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("%s = %v (present %t), want %v", k, g, ok, v)
			}
		}
	})
}

func TestHandlerErrors(t *testing.T) {
	srv, _, _, _ := testAPI(t)
	for _, tc := range []struct {
		method, path string
		code         int
		reason       metav1.StatusReason
	}{
		{"GET", "/pods/default/nope", 404, metav1.StatusReasonNotFound},
		{"GET", "/pods/default", 404, metav1.StatusReasonNotFound},
		{"GET", "/pods/default/web/extra", 404, metav1.StatusReasonNotFound},
		{"GET", "/", 404, metav1.StatusReasonNotFound},
		{"GET", "/logs", 404, metav1.StatusReasonNotFound},
		{"POST", "/pods", 405, metav1.StatusReasonMethodNotAllowed},
		{"DELETE", "/pods/default/web", 405, metav1.StatusReasonMethodNotAllowed},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(""))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var st metav1.Status
			if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
				t.Fatalf("error body is not a Status: %v", err)
			}
			if resp.StatusCode != tc.code || st.Code != int32(tc.code) || st.Reason != tc.reason || st.Message == "" {
				t.Errorf("got %d %+v, want %d %s", resp.StatusCode, st, tc.code, tc.reason)
			}
		})
	}
}

func TestHandlerHealthCheck(t *testing.T) {
	healthy := errors.New("runtime not responding")
	srv, _, _, _ := testAPI(t, WithHealthCheck(func() error { return healthy }))
	resp, body := get(t, srv.URL+"/healthz")
	if resp.StatusCode != 500 || !strings.Contains(string(body), "runtime not responding") {
		t.Errorf("healthz = %d %q", resp.StatusCode, body)
	}
	healthy = nil
	if resp, _ := get(t, srv.URL+"/healthz"); resp.StatusCode != 200 {
		t.Errorf("healthz after recovery = %d", resp.StatusCode)
	}
}

func TestHandlerNilParts(t *testing.T) {
	srv := httptest.NewServer(Handler(NewStore(), nil, nil))
	t.Cleanup(srv.Close)
	for _, path := range []string{"/pods", "/events", "/manifests", "/metrics", "/healthz"} {
		if resp, body := get(t, srv.URL+path); resp.StatusCode != 200 {
			t.Errorf("%s = %d %s", path, resp.StatusCode, body)
		}
	}
	_, body := get(t, srv.URL+"/pods")
	if !strings.Contains(string(body), `"items":[]`) {
		t.Errorf("empty pod list = %s, want items []", body)
	}
}

func TestClient(t *testing.T) {
	srv, _, _, _ := testAPI(t)
	ctx := context.Background()
	c := NewClient(srv.URL + "/")

	pods, err := c.Pods(ctx)
	if err != nil || len(pods.Items) != 2 {
		t.Fatalf("Pods = %v, %v", pods, err)
	}
	pod, err := c.Pod(ctx, "default", "web")
	if err != nil || pod.UID != "u1" {
		t.Errorf("Pod = %v, %v", pod, err)
	}
	if _, err := c.Pod(ctx, "default", "nope"); !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), "pod default/nope not found") {
		t.Errorf("Pod(nope) error = %v, want not found with the server's message", err)
	}
	events, err := c.Events(ctx)
	if err != nil || len(events.Items) != 1 {
		t.Errorf("Events = %v, %v", events, err)
	}
	errs, err := c.Manifests(ctx)
	if err != nil || len(errs) != 1 || errs[0].Path != "/etc/crib/pods/bad.yaml" {
		t.Errorf("Manifests = %v, %v", errs, err)
	}
	if err := c.Healthz(ctx); err != nil {
		t.Errorf("Healthz = %v", err)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Pods(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Pods with a cancelled context = %v", err)
	}
	srv.Close()
	if _, err := c.Pods(ctx); err == nil {
		t.Errorf("Pods against a closed server succeeded")
	}
}

func TestClientUnhealthy(t *testing.T) {
	srv, _, _, _ := testAPI(t, WithHealthCheck(func() error { return errors.New("sick") }))
	if err := NewClient(srv.URL).Healthz(context.Background()); !errdefs.IsUnavailable(err) || !strings.Contains(err.Error(), "sick") {
		t.Errorf("Healthz = %v", err)
	}
}

func TestServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeListener(ctx, ln, Handler(NewStore(), nil, nil)) }()
	t.Cleanup(func() { cancel(); <-done })

	c := NewClient("http://" + ln.Addr().String())
	if err := c.Healthz(ctx); err != nil {
		t.Fatalf("Healthz = %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ServeListener after cancel = %v", err)
	}
	done <- nil // for the cleanup
	// Binding the address proves the listener was closed; a dial to a
	// closed loopback port can connect to itself (TCP simultaneous open).
	again, err := net.Listen("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("listener not released by shutdown: %v", err)
	}
	again.Close()
}

func TestServeBadAddress(t *testing.T) {
	err := Serve(context.Background(), "127.0.0.1:99999", http.NotFoundHandler())
	if err == nil || !strings.Contains(err.Error(), "listen on 127.0.0.1:99999") {
		t.Errorf("Serve = %v", err)
	}
}
