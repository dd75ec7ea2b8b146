package sandboxmetrics

import (
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/kernelstats"
)

// Pod is one pod and what its metrics are made of.
type Pod struct {
	ID, Namespace, Name string
	CreatedAt           time.Time
	// Cgroup is the pod cgroup's reading; nil when there is none.
	Cgroup *kernelstats.Sample
	// Network is the pod's interfaces; nil for a pod on the host's
	// network.
	Network    *kernelstats.Network
	Containers []Container
}

// Container is one container and what its metrics are made of.
type Container struct {
	ID, Name, Image string
	StartedAt       time.Time
	// Cgroup is the container cgroup's reading; a container without one
	// (exited) has no metrics, as cAdvisor sees no cgroup for it.
	Cgroup *kernelstats.Sample
	// Layer is the writable layer's usage; nil when unmeasured.
	Layer *Layer
	// Resources are the container's CRI resources; nil when unset.
	Resources *runtimeapi.LinuxContainerResources
}

// Layer is a writable layer's usage on the filesystem named Device, and
// that filesystem's size (nil when unknown).
type Layer struct {
	Device string
	kernelstats.DiskUsage
	Capacity *kernelstats.Capacity
}

// Descriptors describes every metric Build may report.
func Descriptors() []*runtimeapi.MetricDescriptor {
	out := make([]*runtimeapi.MetricDescriptor, 0, len(families))
	for _, f := range families {
		out = append(out, f.descriptor())
	}
	return out
}

// Build reports p's metrics at now: the pod cgroup's and network's, and
// each container's that has a cgroup.
func Build(p Pod, now time.Time) *runtimeapi.PodSandboxMetrics {
	out := &runtimeapi.PodSandboxMetrics{
		PodSandboxId: p.ID,
		Metrics: metrics(source{now: now, sample: p.Cgroup, network: p.Network, started: p.CreatedAt},
			[]string{"", p.ID, "", "", p.Namespace, p.Name}),
	}
	for _, c := range p.Containers {
		if c.Cgroup == nil {
			continue
		}
		// A container without CRI resources has the kernel's defaults.
		res := c.Resources
		if res == nil {
			res = &runtimeapi.LinuxContainerResources{}
		}
		src := source{now: now, sample: c.Cgroup, layer: c.Layer, resources: res, started: c.StartedAt}
		out.ContainerMetrics = append(out.ContainerMetrics, &runtimeapi.ContainerMetrics{
			ContainerId: c.ID,
			Metrics:     metrics(src, []string{c.Name, c.ID, c.Image, c.ID, p.Namespace, p.Name}),
		})
	}
	return out
}

// metrics are every family's series from src, labelled base (the values
// of baseLabelKeys) and the series' own labels.
func metrics(src source, base []string) []*runtimeapi.Metric {
	var out []*runtimeapi.Metric
	for _, f := range families {
		for _, v := range f.values(src) {
			out = append(out, &runtimeapi.Metric{
				Name:        f.name,
				MetricType:  f.kind,
				LabelValues: append(append([]string{}, base...), v.labels...),
				Value:       &runtimeapi.UInt64Value{Value: v.v},
			})
		}
	}
	return out
}
