package statusapi

import (
	"io"
	"math"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Bucket bounds, in seconds.
var (
	podStartBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60}
	syncBuckets     = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
)

// Metrics are the agent's Prometheus metrics, client_golang collectors
// behind small wrappers that never panic on a caller's mistake. The fields
// may be used directly; the methods below are shorthands that also accept
// a nil *Metrics (and then do nothing), so that callers may run without
// metrics.
type Metrics struct {
	// PodStartDuration: from a manifest appearing to every app container
	// running.
	PodStartDuration *Histogram
	// SyncDuration: one pod worker sync.
	SyncDuration *Histogram
	// ContainerRestarts by namespace, pod, container.
	ContainerRestarts *Counter
	// ProbeResults by probe_type (startup, liveness, readiness) and result
	// (success, failure, unknown).
	ProbeResults *Counter
	// Pods by phase; the HTTP handler refreshes it from the Store on each
	// scrape.
	Pods *Gauge
	// ManifestErrors is the number of manifests that could not be used;
	// refreshed from the Store on each scrape.
	ManifestErrors *Gauge
}

// NewMetrics returns the agent's metrics, all at zero.
func NewMetrics() *Metrics {
	return &Metrics{
		PodStartDuration: NewHistogram("crib_agent_pod_start_duration_seconds",
			"Time from a pod's manifest being seen to all its app containers running.", podStartBuckets),
		SyncDuration: NewHistogram("crib_agent_sync_duration_seconds",
			"Duration of one pod sync.", syncBuckets),
		ContainerRestarts: NewCounter("crib_agent_container_restarts_total",
			"Container restarts by the agent.", "namespace", "pod", "container"),
		ProbeResults: NewCounter("crib_agent_probe_results_total",
			"Probe results by probe type and result.", "probe_type", "result"),
		Pods: NewGauge("crib_agent_pods",
			"Pods the agent manages, by phase.", "phase"),
		ManifestErrors: NewGauge("crib_agent_manifest_errors",
			"Manifests that could not be used."),
	}
}

// ObservePodStart records one pod's start latency.
func (m *Metrics) ObservePodStart(d time.Duration) {
	if m != nil {
		m.PodStartDuration.Observe(d.Seconds())
	}
}

// ObserveSync records one sync's duration.
func (m *Metrics) ObserveSync(d time.Duration) {
	if m != nil {
		m.SyncDuration.Observe(d.Seconds())
	}
}

// ContainerRestarted counts one restart.
func (m *Metrics) ContainerRestarted(namespace, pod, container string) {
	if m != nil {
		m.ContainerRestarts.Inc(namespace, pod, container)
	}
}

// ProbeResult counts one probe result.
func (m *Metrics) ProbeResult(probeType, result string) {
	if m != nil {
		m.ProbeResults.Inc(probeType, result)
	}
}

// collectors are m's metrics in the order they are written.
func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		m.PodStartDuration.vec, m.SyncDuration.vec, m.ContainerRestarts.vec,
		m.ProbeResults.vec, m.Pods.vec, m.ManifestErrors.vec,
	}
}

// Registry returns a registry of every metric, e.g. to lint them or to
// serve them with promhttp.
func (m *Metrics) Registry() (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	for _, c := range m.collectors() {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// WriteTo writes every metric in the Prometheus text exposition format
// (version 0.0.4), in the order of the fields.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	reg, err := m.Registry()
	if err != nil {
		return 0, err
	}
	mfs, err := reg.Gather()
	if err != nil {
		return 0, err
	}
	var written int64
	for _, c := range m.collectors() {
		name := nameOf(c)
		i := slices.IndexFunc(mfs, func(mf *dto.MetricFamily) bool { return mf.GetName() == name })
		if i < 0 {
			continue // a family without series yet
		}
		n, err := expfmt.MetricFamilyToText(w, mfs[i])
		written += int64(n)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// TextContentType is the Content-Type of WriteTo's output.
const TextContentType = "text/plain; version=0.0.4; charset=utf-8"

// named keeps a vector's metric name, which client_golang does not hand
// back, so that WriteTo can keep the fields' order.
type named struct{ name string }

func nameOf(c prometheus.Collector) string {
	switch v := c.(type) {
	case *counterVec:
		return v.name
	case *gaugeVec:
		return v.name
	case *histogramVec:
		return v.name
	}
	return ""
}

type counterVec struct {
	*prometheus.CounterVec
	named
}

type gaugeVec struct {
	*prometheus.GaugeVec
	named
}

type histogramVec struct {
	*prometheus.HistogramVec
	named
}

// Counter is a monotonically increasing value per label set.
type Counter struct{ vec *counterVec }

// NewCounter returns a counter with the given label names. A counter
// without labels has its one series, at zero, from the start.
func NewCounter(name, help string, labels ...string) *Counter {
	c := &Counter{&counterVec{prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels), named{name}}}
	if len(labels) == 0 {
		c.vec.WithLabelValues()
	}
	return c
}

// Inc adds one. The label values must match the label names in number,
// or the call is ignored; so are negative Adds.
func (c *Counter) Inc(values ...string) { c.Add(1, values...) }

// Add adds v (>= 0).
func (c *Counter) Add(v float64, values ...string) {
	if v < 0 {
		return
	}
	if s, err := c.vec.GetMetricWithLabelValues(values...); err == nil {
		s.Add(v)
	}
}

// Delete drops one series, e.g. a removed pod's.
func (c *Counter) Delete(values ...string) { c.vec.DeleteLabelValues(values...) }

// Gauge is a value per label set that may go up and down.
type Gauge struct{ vec *gaugeVec }

// NewGauge returns a gauge with the given label names. A gauge without
// labels has its one series, at zero, from the start.
func NewGauge(name, help string, labels ...string) *Gauge {
	g := &Gauge{&gaugeVec{prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels), named{name}}}
	if len(labels) == 0 {
		g.vec.WithLabelValues()
	}
	return g
}

// Set sets the value for the label values; a wrong number of them is
// ignored.
func (g *Gauge) Set(v float64, values ...string) {
	if s, err := g.vec.GetMetricWithLabelValues(values...); err == nil {
		s.Set(v)
	}
}

// Delete drops one series.
func (g *Gauge) Delete(values ...string) { g.vec.DeleteLabelValues(values...) }

// Histogram counts observations into cumulative buckets.
type Histogram struct{ vec *histogramVec }

// NewHistogram returns a histogram with the given upper bucket bounds
// (sorted here; +Inf is implied, and is the only one when buckets is
// empty). A histogram without labels has its one series from the start.
func NewHistogram(name, help string, buckets []float64, labels ...string) *Histogram {
	b := slices.Compact(slices.Sorted(slices.Values(buckets)))
	if len(b) == 0 {
		// client_golang reads no buckets as its defaults; a lone +Inf
		// bound, which it drops as implied, leaves none.
		b = []float64{math.Inf(1)}
	}
	h := &Histogram{&histogramVec{prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: b}, labels), named{name}}}
	if len(labels) == 0 {
		h.vec.WithLabelValues()
	}
	return h
}

// Observe records one value; a wrong number of label values is ignored.
func (h *Histogram) Observe(v float64, values ...string) {
	if s, err := h.vec.GetMetricWithLabelValues(values...); err == nil {
		s.Observe(v)
	}
}
