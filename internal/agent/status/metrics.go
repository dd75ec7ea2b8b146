package status

import (
	"bufio"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bucket bounds, in seconds.
var (
	podStartBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60}
	syncBuckets     = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
)

// Metrics are the agent's Prometheus metrics. The fields may be used
// directly; the methods below are shorthands that also accept a nil
// *Metrics (and then do nothing), so that callers may run without metrics.
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

// WriteTo writes every metric in the Prometheus text exposition format
// (version 0.0.4).
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	bw := bufio.NewWriter(cw)
	for _, f := range []*family{
		m.PodStartDuration.family, m.SyncDuration.family, m.ContainerRestarts.family,
		m.ProbeResults.family, m.Pods.family, m.ManifestErrors.family,
	} {
		f.write(bw)
	}
	err := bw.Flush()
	return cw.n, err
}

// TextContentType is the Content-Type of WriteTo's output.
const TextContentType = "text/plain; version=0.0.4; charset=utf-8"

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// family is one metric name with its series, keyed by label values.
type family struct {
	name, help, typ string
	labels          []string
	buckets         []float64 // histograms only

	mu     sync.Mutex
	series map[string]*series
}

type series struct {
	values []string
	value  float64  // counter and gauge
	counts []uint64 // histogram, one per bucket, not cumulative
	count  uint64
	sum    float64
}

func newFamily(name, help, typ string, labels []string) *family {
	return &family{name: name, help: help, typ: typ, labels: labels, series: map[string]*series{}}
}

// get returns the series for values, creating it; nil when the number of
// values does not match the labels, which drops the observation.
func (f *family) get(values []string) *series {
	if len(values) != len(f.labels) {
		return nil
	}
	key := strings.Join(values, "\xff")
	s, ok := f.series[key]
	if !ok {
		s = &series{values: append([]string(nil), values...)}
		if f.typ == "histogram" {
			s.counts = make([]uint64, len(f.buckets))
		}
		f.series[key] = s
	}
	return s
}

func (f *family) delete(values []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.series, strings.Join(values, "\xff"))
}

func (f *family) write(w *bufio.Writer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.WriteString("# HELP " + f.name + " " + escapeHelp(f.help) + "\n")
	w.WriteString("# TYPE " + f.name + " " + f.typ + "\n")
	keys := make([]string, 0, len(f.series))
	for k := range f.series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 0 && len(f.labels) == 0 {
		// A metric without labels always has its one series.
		keys = append(keys, "")
		f.get(nil)
	}
	for _, k := range keys {
		s := f.series[k]
		if f.typ != "histogram" {
			writeSample(w, f.name, f.labels, s.values, "", "", s.value)
			continue
		}
		var cum uint64
		for i, le := range f.buckets {
			cum += s.counts[i]
			writeSample(w, f.name+"_bucket", f.labels, s.values, "le", formatFloat(le), float64(cum))
		}
		writeSample(w, f.name+"_bucket", f.labels, s.values, "le", "+Inf", float64(s.count))
		writeSample(w, f.name+"_sum", f.labels, s.values, "", "", s.sum)
		writeSample(w, f.name+"_count", f.labels, s.values, "", "", float64(s.count))
	}
}

func writeSample(w *bufio.Writer, name string, labels, values []string, extraName, extraValue string, v float64) {
	w.WriteString(name)
	if len(labels) > 0 || extraName != "" {
		w.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(l + `="` + escapeLabel(values[i]) + `"`)
		}
		if extraName != "" {
			if len(labels) > 0 {
				w.WriteByte(',')
			}
			w.WriteString(extraName + `="` + escapeLabel(extraValue) + `"`)
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(formatFloat(v))
	w.WriteByte('\n')
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeLabel(s string) string { return labelEscaper.Replace(s) }

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Counter is a monotonically increasing value per label set.
type Counter struct{ *family }

// NewCounter returns a counter with the given label names.
func NewCounter(name, help string, labels ...string) *Counter {
	return &Counter{newFamily(name, help, "counter", labels)}
}

// Inc adds one. The label values must match the label names in number,
// or the call is ignored; so are negative Adds.
func (c *Counter) Inc(values ...string) { c.Add(1, values...) }

// Add adds v (>= 0).
func (c *Counter) Add(v float64, values ...string) {
	if v < 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.get(values); s != nil {
		s.value += v
	}
}

// Delete drops one series, e.g. a removed pod's.
func (c *Counter) Delete(values ...string) { c.delete(values) }

// Gauge is a value per label set that may go up and down.
type Gauge struct{ *family }

// NewGauge returns a gauge with the given label names.
func NewGauge(name, help string, labels ...string) *Gauge {
	return &Gauge{newFamily(name, help, "gauge", labels)}
}

// Set sets the value for the label values.
func (g *Gauge) Set(v float64, values ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s := g.get(values); s != nil {
		s.value = v
	}
}

// Delete drops one series.
func (g *Gauge) Delete(values ...string) { g.delete(values) }

// Histogram counts observations into cumulative buckets.
type Histogram struct{ *family }

// NewHistogram returns a histogram with the given upper bucket bounds
// (sorted here; +Inf is implied).
func NewHistogram(name, help string, buckets []float64, labels ...string) *Histogram {
	f := newFamily(name, help, "histogram", labels)
	f.buckets = append([]float64(nil), buckets...)
	sort.Float64s(f.buckets)
	return &Histogram{f}
}

// Observe records one value.
func (h *Histogram) Observe(v float64, values ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.get(values)
	if s == nil {
		return
	}
	if i := sort.SearchFloat64s(h.buckets, v); i < len(h.buckets) {
		s.counts[i]++
	}
	s.count++
	s.sum += v
}
