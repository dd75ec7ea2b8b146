package runtimemetrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Bucket bounds, in seconds.
var (
	// rpcBuckets reach from a status call (well under a millisecond) to a
	// slow pull or a stop with a long grace period.
	rpcBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}
	// phaseBuckets: a pod-start phase takes from microseconds (an image
	// resolve) to seconds (a CNI ADD on a loaded host).
	phaseBuckets = []float64{0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	// pullBuckets: a pull takes from a few milliseconds (every layer
	// present) to minutes.
	pullBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	cniBuckets  = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
)

// The pod-start phases, the values of crib_pod_start_phase_seconds' phase
// label.
const (
	PhaseNamespaces   = "namespaces"    // pin the pod's namespaces
	PhaseCNIAdd       = "cni_add"       // attach the pod to its network
	PhaseImageResolve = "image_resolve" // find a container's image
	PhaseSpec         = "spec"          // rootfs, OCI spec and bundle
	PhaseRuntimeStart = "runtime_start" // the OCI runtime creates and starts the container
)

// The reasons of crib_image_pull_failures_total.
const (
	ReasonNotFound     = "not_found"
	ReasonUnauthorized = "unauthorized"
	ReasonNetwork      = "network"
	ReasonInvalid      = "invalid"
	ReasonCanceled     = "canceled"
	ReasonOther        = "other"
)

// Reasons are every pull failure reason; each has a series from the start.
var Reasons = []string{ReasonNotFound, ReasonUnauthorized, ReasonNetwork, ReasonInvalid, ReasonCanceled, ReasonOther}

// Metrics is the runtime's set of collectors. Its methods accept a nil
// receiver and then do nothing.
type Metrics struct {
	reg *prometheus.Registry
	log *slog.Logger

	rpc          *prometheus.HistogramVec // method, code
	phases       *prometheus.HistogramVec // phase
	pullBytes    prometheus.Counter
	pullSeconds  prometheus.Histogram
	pullsRunning prometheus.Gauge
	pullFailures *prometheus.CounterVec   // reason
	cni          *prometheus.HistogramVec // op, result

	traces podTraces
}

// New returns the runtime's metrics, registered in a new registry with
// the Go runtime's and the process's collectors. log receives the pod
// start traces, at debug level.
func New(log *slog.Logger) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		log: log,
		rpc: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "crib_cri_request_duration_seconds",
			Help:    "Duration of CRI RPCs by method and gRPC status code.",
			Buckets: rpcBuckets,
		}, []string{"method", "code"}),
		phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "crib_pod_start_phase_duration_seconds",
			Help:    "Duration of each phase of starting a pod and its containers.",
			Buckets: phaseBuckets,
		}, []string{"phase"}),
		pullBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "crib_image_pull_bytes_total",
			Help: "Bytes of layer blobs downloaded by image pulls.",
		}),
		pullSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "crib_image_pull_duration_seconds",
			Help:    "Duration of image pulls, failed ones included.",
			Buckets: pullBuckets,
		}),
		pullsRunning: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "crib_image_pulls_in_flight",
			Help: "Image pulls in progress.",
		}),
		pullFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crib_image_pull_failures_total",
			Help: "Failed image pulls by reason.",
		}, []string{"reason"}),
		cni: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "crib_cni_operation_duration_seconds",
			Help:    "Duration of CNI ADD and DEL of a pod by result.",
			Buckets: cniBuckets,
		}, []string{"op", "result"}),
	}
	for _, r := range Reasons {
		m.pullFailures.WithLabelValues(r)
	}
	m.traces.byPod = map[string]*podTrace{}
	m.reg.MustRegister(
		m.rpc, m.phases, m.pullBytes, m.pullSeconds, m.pullsRunning, m.pullFailures, m.cni,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// Registry is where the collectors are registered; tests gather from it.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Register adds a collector, e.g. the counts by state.
func (m *Metrics) Register(c prometheus.Collector) error {
	if m == nil {
		return nil
	}
	return m.reg.Register(c)
}

// ObserveRPC records one CRI RPC.
func (m *Metrics) ObserveRPC(method, code string, d time.Duration) {
	if m != nil {
		m.rpc.WithLabelValues(method, code).Observe(d.Seconds())
	}
}

// PullStarted counts a pull in flight until PullFinished.
func (m *Metrics) PullStarted() {
	if m != nil {
		m.pullsRunning.Inc()
	}
}

// PullFinished records the end of a pull that took d; reason is "" for a
// pull that succeeded, else one of Reasons (others count as ReasonOther).
func (m *Metrics) PullFinished(d time.Duration, reason string) {
	if m == nil {
		return
	}
	m.pullsRunning.Dec()
	m.pullSeconds.Observe(d.Seconds())
	if reason == "" {
		return
	}
	known := false
	for _, r := range Reasons {
		known = known || r == reason
	}
	if !known {
		reason = ReasonOther
	}
	m.pullFailures.WithLabelValues(reason).Inc()
}

// PullBytes counts n bytes of layer blobs downloaded.
func (m *Metrics) PullBytes(n int) {
	if m != nil && n > 0 {
		m.pullBytes.Add(float64(n))
	}
}

// ObserveCNI records one CNI operation ("add" or "del") that took d and
// failed with err, or succeeded when err is nil.
func (m *Metrics) ObserveCNI(op string, d time.Duration, err error) {
	if m == nil {
		return
	}
	result := "success"
	if err != nil {
		result = "failure"
	}
	m.cni.WithLabelValues(op, result).Observe(d.Seconds())
}

// Listen opens addr for the /metrics endpoint; the returned Server
// serves it.
func (m *Metrics) Listen(addr string) (*Server, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for metrics on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorLog: slogErrors{m.log}}))
	return &Server{lis: lis, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// Server is the HTTP server of /metrics.
type Server struct {
	lis net.Listener
	srv *http.Server
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.lis.Addr() }

// Serve serves until Close; it returns nil then.
func (s *Server) Serve() error {
	if err := s.srv.Serve(s.lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve metrics: %w", err)
	}
	return nil
}

// Close stops serving, letting a scrape in progress finish while ctx
// allows.
func (s *Server) Close(ctx context.Context) error {
	if err := s.srv.Shutdown(ctx); err != nil {
		return s.srv.Close()
	}
	// Shutdown closes the listener only once Serve runs.
	if err := s.lis.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// slogErrors logs promhttp's errors (a collector failing) as warnings.
type slogErrors struct{ log *slog.Logger }

func (s slogErrors) Println(v ...any) { s.log.Warn("serve metrics", "err", fmt.Sprint(v...)) }

// podTraces are the pod starts in progress, each with its phases so far.
type podTraces struct {
	mu    sync.Mutex
	byPod map[string]*podTrace
}

// podTrace is one pod start in progress.
type podTrace struct {
	began  time.Time
	phases []slog.Attr
}

// BeginPod starts the trace of pod's start.
func (m *Metrics) BeginPod(pod string) {
	if m == nil {
		return
	}
	m.traces.mu.Lock()
	m.traces.byPod[pod] = &podTrace{began: time.Now()}
	m.traces.mu.Unlock()
}

// PodPhase records that a phase of a start in pod took d: in the
// histogram always, in the pod's trace while its start is traced.
func (m *Metrics) PodPhase(pod, phase string, d time.Duration) {
	if m == nil {
		return
	}
	m.phases.WithLabelValues(phase).Observe(d.Seconds())
	m.traces.mu.Lock()
	if t := m.traces.byPod[pod]; t != nil {
		t.phases = append(t.phases, slog.Duration(phase, d))
	}
	m.traces.mu.Unlock()
}

// EndPod ends the trace of pod's start, if it is traced, and logs it in
// one line at debug level; err says why the start did not succeed.
// Ending a start already ended does nothing.
func (m *Metrics) EndPod(pod string, err error) {
	if m == nil {
		return
	}
	m.traces.mu.Lock()
	t := m.traces.byPod[pod]
	delete(m.traces.byPod, pod)
	m.traces.mu.Unlock()
	if t == nil {
		return
	}
	attrs := []any{"pod", pod, "total", time.Since(t.began)}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	attrs = append(attrs, slog.Group("phases", anys(t.phases)...))
	m.log.Debug("pod start trace", attrs...)
}

func anys(attrs []slog.Attr) []any {
	out := make([]any, len(attrs))
	for i, a := range attrs {
		out[i] = a
	}
	return out
}
