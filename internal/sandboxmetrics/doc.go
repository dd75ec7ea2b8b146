// Package sandboxmetrics builds the CRI's pod sandbox metrics
// (ListMetricDescriptors, ListPodSandboxMetrics) from usage figures, with
// the names, label keys and types cAdvisor gives them at the kubelet's
// /metrics/cadvisor, so that a kubelet with PodAndContainerStatsFromCRI
// serves the same series without cAdvisor.
//
// It is pure: it reads nothing, and is handed the statsservice package's figures
// and the identity of each pod and container. Every metric is one family
// in one table (name, help, type, label keys, and how its values come from
// the figures), so a metric cannot be emitted without its descriptor.
//
// The CRI carries values as unsigned integers and the kubelet exports them
// unscaled, so times are whole seconds (truncated), as containerd and
// CRI-O give them; the exact figures are in the stats RPCs (nanoseconds),
// from which the kubelet's /metrics/resource computes its seconds. Metrics
// are gathered live, so their timestamps are 0, as the CRI asks.
package sandboxmetrics
