package nri

import (
	"time"

	nri "github.com/containerd/nri/pkg/adaptation"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics is NRI's Metrics as Prometheus collectors: plugins connected,
// requests and their latency by plugin and event, adjustments made, and
// requests refused (a plugin's error, a validator's rejection, a
// timeout).
type Metrics struct {
	plugins     prometheus.Gauge
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	adjustments *prometheus.CounterVec
	refused     *prometheus.CounterVec
}

var _ nri.Metrics = (*Metrics)(nil)

// NewMetrics makes the collectors; register them with Collectors.
func NewMetrics() *Metrics {
	return &Metrics{
		plugins: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "crib_nri_plugins", Help: "NRI plugins connected.",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crib_nri_requests_total", Help: "NRI requests to plugins by plugin, event and result (ok, error).",
		}, []string{"plugin", "event", "result"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "crib_nri_request_duration_seconds",
			Help:    "Latency of NRI requests to plugins by plugin and event.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"plugin", "event"}),
		adjustments: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crib_nri_adjustments_total", Help: "Container adjustments, updates and evictions plugins answered with, by plugin and event.",
		}, []string{"plugin", "event", "kind"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crib_nri_refused_total", Help: "Operations NRI refused, by event: a plugin's error or timeout under its failure policy, a validator's rejection, an adjustment crib cannot apply.",
		}, []string{"event"}),
	}
}

// Refused counts an operation that NRI refused.
func (m *Metrics) Refused(event string) {
	if m != nil {
		m.refused.WithLabelValues(event).Inc()
	}
}

// Collectors are the collectors to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.plugins, m.requests, m.latency, m.adjustments, m.refused}
}

// RecordPluginInvocation implements nri.Metrics.
func (m *Metrics) RecordPluginInvocation(plugin, op string, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.requests.WithLabelValues(plugin, op, result).Inc()
}

// RecordPluginLatency implements nri.Metrics.
func (m *Metrics) RecordPluginLatency(plugin, op string, d time.Duration) {
	m.latency.WithLabelValues(plugin, op).Observe(d.Seconds())
}

// RecordPluginAdjustments implements nri.Metrics.
func (m *Metrics) RecordPluginAdjustments(plugin, op string, a *nri.ContainerAdjustment, updates, evicts int) {
	if a != nil {
		m.adjustments.WithLabelValues(plugin, op, "adjust").Inc()
	}
	if updates > 0 {
		m.adjustments.WithLabelValues(plugin, op, "update").Add(float64(updates))
	}
	if evicts > 0 {
		m.adjustments.WithLabelValues(plugin, op, "evict").Add(float64(evicts))
	}
}

// UpdatePluginCount implements nri.Metrics.
func (m *Metrics) UpdatePluginCount(n int) { m.plugins.Set(float64(n)) }
