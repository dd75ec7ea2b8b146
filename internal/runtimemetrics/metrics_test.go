package runtimemetrics

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// families gathers m's registry by name.
func families(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// series returns the metric of family name whose labels are exactly
// labels, or nil.
func series(fams map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	for _, m := range fams[name].GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			match = match && labels[l.GetName()] == l.GetValue()
		}
		if match {
			return m
		}
	}
	return nil
}

func TestRPCAndCNI(t *testing.T) {
	m := New(slog.New(slog.DiscardHandler))
	m.ObserveRPC("RunPodSandbox", "OK", 30*time.Millisecond)
	m.ObserveRPC("RunPodSandbox", "OK", 10*time.Millisecond)
	m.ObserveRPC("PullImage", "NotFound", time.Second)
	m.ObserveCNI("add", 20*time.Millisecond, nil)
	m.ObserveCNI("del", time.Millisecond, errors.New("plugin failed"))

	fams := families(t, m)
	for _, tt := range []struct {
		name   string
		labels map[string]string
		count  uint64
		sum    float64
	}{
		{"crib_cri_request_duration_seconds", map[string]string{"method": "RunPodSandbox", "code": "OK"}, 2, 0.04},
		{"crib_cri_request_duration_seconds", map[string]string{"method": "PullImage", "code": "NotFound"}, 1, 1},
		{"crib_cni_operation_duration_seconds", map[string]string{"op": "add", "result": "success"}, 1, 0.02},
		{"crib_cni_operation_duration_seconds", map[string]string{"op": "del", "result": "failure"}, 1, 0.001},
	} {
		s := series(fams, tt.name, tt.labels)
		if s == nil {
			t.Errorf("%s%v: no series", tt.name, tt.labels)
			continue
		}
		h := s.GetHistogram()
		if h.GetSampleCount() != tt.count || abs(h.GetSampleSum()-tt.sum) > 1e-9 {
			t.Errorf("%s%v: count %d sum %v, want %d %v", tt.name, tt.labels, h.GetSampleCount(), h.GetSampleSum(), tt.count, tt.sum)
		}
	}
	if n := len(fams["crib_cri_request_duration_seconds"].GetMetric()); n != 2 {
		t.Errorf("%d RPC series, want 2", n)
	}
	lint(t, m)
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// lint fails the test on what promlint finds in m's metrics.
func lint(t *testing.T, m *Metrics) {
	t.Helper()
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatalf("GatherAndLint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestPulls(t *testing.T) {
	m := New(slog.New(slog.DiscardHandler))
	if got := testutil.ToFloat64(m.pullsRunning); got != 0 {
		t.Fatalf("pulls in flight at start = %v", got)
	}
	m.PullStarted()
	m.PullStarted()
	m.PullStarted()
	if got := testutil.ToFloat64(m.pullsRunning); got != 3 {
		t.Fatalf("pulls in flight = %v, want 3", got)
	}
	m.PullBytes(1000)
	m.PullBytes(0)
	m.PullBytes(24)
	m.PullFinished(time.Second, "")
	m.PullFinished(2*time.Second, ReasonNotFound)
	m.PullFinished(time.Millisecond, "something new")
	if got := testutil.ToFloat64(m.pullsRunning); got != 0 {
		t.Errorf("pulls in flight after = %v, want 0", got)
	}
	if got := testutil.ToFloat64(m.pullBytes); got != 1024 {
		t.Errorf("pull bytes = %v, want 1024", got)
	}
	fams := families(t, m)
	if got := series(fams, "crib_image_pull_duration_seconds", nil).GetHistogram().GetSampleCount(); got != 3 {
		t.Errorf("pull durations observed %d, want 3", got)
	}
	want := map[string]float64{ReasonNotFound: 1, ReasonOther: 1, ReasonUnauthorized: 0, ReasonNetwork: 0, ReasonInvalid: 0, ReasonCanceled: 0}
	if n := len(fams["crib_image_pull_failures_total"].GetMetric()); n != len(want) {
		t.Errorf("%d failure series, want %d (one per reason)", n, len(want))
	}
	for reason, v := range want {
		if got := series(fams, "crib_image_pull_failures_total", map[string]string{"reason": reason}).GetCounter().GetValue(); got != v {
			t.Errorf("failures{reason=%s} = %v, want %v", reason, got, v)
		}
	}
	lint(t, m)
}

func TestPodTrace(t *testing.T) {
	var logs bytes.Buffer
	m := New(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	m.BeginPod("pod1")
	m.PodPhase("pod1", PhaseNamespaces, 2*time.Millisecond)
	m.PodPhase("pod1", PhaseCNIAdd, 40*time.Millisecond)
	m.PodPhase("other", PhaseImageResolve, time.Millisecond) // not traced: histogram only
	m.PodPhase("pod1", PhaseImageResolve, 100*time.Microsecond)
	m.PodPhase("pod1", PhaseSpec, 3*time.Millisecond)
	m.PodPhase("pod1", PhaseRuntimeStart, 50*time.Millisecond)
	m.EndPod("pod1", nil)
	// A second container of the pod: measured, not traced again.
	m.PodPhase("pod1", PhaseRuntimeStart, 60*time.Millisecond)
	m.EndPod("pod1", nil)

	m.BeginPod("pod2")
	m.PodPhase("pod2", PhaseNamespaces, time.Millisecond)
	m.EndPod("pod2", errors.New("cni failed"))

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d log lines, want one per pod start:\n%s", len(lines), logs.String())
	}
	for _, want := range []string{"level=DEBUG", `msg="pod start trace"`, "pod=pod1", "phases.namespaces=2ms", "phases.cni_add=40ms",
		"phases.image_resolve=100µs", "phases.spec=3ms", "phases.runtime_start=50ms", "total="} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("trace %q lacks %q", lines[0], want)
		}
	}
	if strings.Contains(lines[0], "err=") {
		t.Errorf("trace of a good start has an error: %q", lines[0])
	}
	for _, want := range []string{"pod=pod2", `err="cni failed"`, "phases.namespaces=1ms"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("trace %q lacks %q", lines[1], want)
		}
	}
	if len(m.traces.byPod) != 0 {
		t.Errorf("%d traces left after every start ended", len(m.traces.byPod))
	}

	fams := families(t, m)
	for phase, count := range map[string]uint64{PhaseNamespaces: 2, PhaseCNIAdd: 1, PhaseImageResolve: 2, PhaseSpec: 1, PhaseRuntimeStart: 2} {
		if got := series(fams, "crib_pod_start_phase_duration_seconds", map[string]string{"phase": phase}).GetHistogram().GetSampleCount(); got != count {
			t.Errorf("phase %s observed %d times, want %d", phase, got, count)
		}
	}
	lint(t, m)
}

func TestStateCollector(t *testing.T) {
	m := New(slog.New(slog.DiscardHandler))
	states := []string{"running", "exited"}
	idle := 1.0
	err := m.Register(NewStateCollector(Counted{
		Name: "crib_things", Help: "Things by state.", States: []string{"created", "running", "exited"},
		List: func() []string { return states },
	}).Value("crib_idle_things", "Idle things.", func() float64 { return idle }))
	if err != nil {
		t.Fatal(err)
	}
	check := func(want map[string]float64, wantIdle float64) {
		t.Helper()
		fams := families(t, m)
		if n := len(fams["crib_things"].GetMetric()); n != len(want) {
			t.Errorf("%d series, want %d", n, len(want))
		}
		for st, v := range want {
			if got := series(fams, "crib_things", map[string]string{"state": st}).GetGauge().GetValue(); got != v {
				t.Errorf("things{state=%s} = %v, want %v", st, got, v)
			}
		}
		if got := series(fams, "crib_idle_things", nil).GetGauge().GetValue(); got != wantIdle {
			t.Errorf("idle things = %v, want %v", got, wantIdle)
		}
	}
	check(map[string]float64{"created": 0, "running": 1, "exited": 1}, 1)
	// Read again at the next scrape, never kept.
	states = []string{"running", "running", "odd"}
	idle = 0
	check(map[string]float64{"created": 0, "running": 2, "exited": 0, "odd": 1}, 0)
	lint(t, m)
}

func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.ObserveRPC("Version", "OK", time.Millisecond)
	m.PullStarted()
	m.PullBytes(10)
	m.PullFinished(time.Second, ReasonNetwork)
	m.ObserveCNI("add", time.Millisecond, nil)
	m.BeginPod("p")
	m.PodPhase("p", PhaseSpec, time.Millisecond)
	m.EndPod("p", nil)
	if err := m.Register(NewStateCollector()); err != nil {
		t.Fatal(err)
	}
}

func TestServer(t *testing.T) {
	m := New(slog.New(slog.DiscardHandler))
	m.ObserveRPC("Version", "OK", time.Millisecond)
	srv, err := m.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	resp, err := http.Get("http://" + srv.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d, %v", resp.StatusCode, err)
	}
	for _, want := range []string{`crib_cri_request_duration_seconds_count{code="OK",method="Version"} 1`, "go_goroutines", "process_cpu_seconds_total"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if err := srv.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve after Close = %v, want nil", err)
	}
	if _, err := http.Get("http://" + srv.Addr().String() + "/metrics"); err == nil {
		t.Error("/metrics still served after Close")
	}

	// A server closed before it served frees its port all the same.
	srv, err = m.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(context.Background()); err != nil {
		t.Fatalf("Close before Serve: %v", err)
	}
	again, err := m.Listen(srv.Addr().String())
	if err != nil {
		t.Fatalf("port not freed by Close before Serve: %v", err)
	}
	_ = again.Close(context.Background())
}
