package sandboxmetrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/kernelstats"
)

var now = time.Unix(1_800_000_000, 0)

// fullSample has every figure a cgroup v2 host gives.
func fullSample() *kernelstats.Sample {
	psi := func(some, full uint64) *kernelstats.Pressure {
		return &kernelstats.Pressure{Some: kernelstats.PressureData{TotalNanos: some}, Full: kernelstats.PressureData{TotalNanos: full}}
	}
	return &kernelstats.Sample{
		Time: now,
		CPU: &kernelstats.CPU{
			UsageNanos: 7_900_000_000, UserNanos: 5_000_000_000, SystemNanos: 2_900_000_000,
			Throttling: &kernelstats.Throttling{Periods: 40, ThrottledPeriods: 4, ThrottledNanos: 3_000_000_000},
			Pressure:   psi(2_000_000_000, 1_000_000_000),
		},
		Memory: &kernelstats.Memory{
			Usage: 30 << 20, WorkingSet: 20 << 20, RSS: 15 << 20, Cache: 10 << 20, MappedFile: 1 << 20,
			MaxUsage: 40 << 20, Failcnt: 2, OOMKills: 1, PageFaults: 900, MajorPageFaults: 9,
			Pressure: psi(4_000_000_000, 3_000_000_000),
		},
		Swap: &kernelstats.Swap{Usage: 4096},
		Pids: &kernelstats.Pids{Current: 5, Processes: 2, Limit: 100, Limited: true},
		IO:   &kernelstats.IO{Pressure: psi(6_000_000_000, 5_000_000_000)},
	}
}

func fullPod() Pod {
	return Pod{
		ID: "sb1", Namespace: "default", Name: "web", CreatedAt: now.Add(-time.Minute),
		Cgroup: fullSample(),
		Network: &kernelstats.Network{Time: now, Interfaces: []kernelstats.Interface{
			{Name: "eth0", RxBytes: 1000, RxPackets: 10, RxErrors: 1, RxDropped: 2, TxBytes: 500, TxPackets: 5, TxErrors: 3, TxDropped: 4},
			{Name: "net1", RxBytes: 7},
		}},
		Containers: []Container{
			{
				ID: "c1", Name: "app", Image: "docker.io/library/busybox:1.36", StartedAt: now.Add(-30 * time.Second),
				Cgroup: fullSample(),
				Layer: &Layer{Device: "/var/lib/crib", DiskUsage: kernelstats.DiskUsage{Bytes: 8192, Inodes: 3},
					Capacity: &kernelstats.Capacity{Bytes: 10 << 30, Inodes: 1000, InodesFree: 600}},
				Resources: &runtimeapi.LinuxContainerResources{CpuPeriod: 50_000, CpuQuota: 25_000, CpuShares: 512, MemoryLimitInBytes: 64 << 20},
			},
			{ID: "gone", Name: "exited"}, // no cgroup: no metrics
		},
	}
}

// series indexes metrics by "name{label values}".
func series(ms []*runtimeapi.Metric) map[string]*runtimeapi.Metric {
	out := map[string]*runtimeapi.Metric{}
	for _, m := range ms {
		out[fmt.Sprintf("%s{%s}", m.Name, strings.Join(m.LabelValues, ","))] = m
	}
	return out
}

func TestBuild(t *testing.T) {
	got := Build(fullPod(), now)
	if got.PodSandboxId != "sb1" {
		t.Errorf("pod sandbox id = %q", got.PodSandboxId)
	}
	if len(got.ContainerMetrics) != 1 || got.ContainerMetrics[0].ContainerId != "c1" {
		t.Fatalf("container metrics for %v, want c1 only (the exited one has no cgroup)", got.ContainerMetrics)
	}
	pod := series(got.Metrics)
	ctr := series(got.ContainerMetrics[0].Metrics)
	const podL = ",sb1,,,default,web"
	const ctrL = "app,c1,docker.io/library/busybox:1.36,c1,default,web"
	tests := []struct {
		set  map[string]*runtimeapi.Metric
		key  string
		kind runtimeapi.MetricType
		want uint64
	}{
		{pod, "container_last_seen{" + podL + "}", gauge, uint64(now.Unix())},
		{pod, "container_start_time_seconds{" + podL + "}", gauge, uint64(now.Unix() - 60)},
		{pod, "container_cpu_usage_seconds_total{" + podL + ",total}", counter, 7},
		{pod, "container_memory_working_set_bytes{" + podL + "}", gauge, 20 << 20},
		{pod, "container_network_receive_bytes_total{" + podL + ",eth0}", counter, 1000},
		{pod, "container_network_receive_packets_total{" + podL + ",eth0}", counter, 10},
		{pod, "container_network_receive_errors_total{" + podL + ",eth0}", counter, 1},
		{pod, "container_network_receive_packets_dropped_total{" + podL + ",eth0}", counter, 2},
		{pod, "container_network_transmit_bytes_total{" + podL + ",eth0}", counter, 500},
		{pod, "container_network_transmit_packets_total{" + podL + ",eth0}", counter, 5},
		{pod, "container_network_transmit_errors_total{" + podL + ",eth0}", counter, 3},
		{pod, "container_network_transmit_packets_dropped_total{" + podL + ",eth0}", counter, 4},
		{pod, "container_network_receive_bytes_total{" + podL + ",net1}", counter, 7},

		{ctr, "container_last_seen{" + ctrL + "}", gauge, uint64(now.Unix())},
		{ctr, "container_start_time_seconds{" + ctrL + "}", gauge, uint64(now.Unix() - 30)},
		{ctr, "container_cpu_usage_seconds_total{" + ctrL + ",total}", counter, 7},
		{ctr, "container_cpu_user_seconds_total{" + ctrL + "}", counter, 5},
		{ctr, "container_cpu_system_seconds_total{" + ctrL + "}", counter, 2},
		{ctr, "container_cpu_cfs_periods_total{" + ctrL + "}", counter, 40},
		{ctr, "container_cpu_cfs_throttled_periods_total{" + ctrL + "}", counter, 4},
		{ctr, "container_cpu_cfs_throttled_seconds_total{" + ctrL + "}", counter, 3},
		{ctr, "container_memory_usage_bytes{" + ctrL + "}", gauge, 30 << 20},
		{ctr, "container_memory_working_set_bytes{" + ctrL + "}", gauge, 20 << 20},
		{ctr, "container_memory_rss{" + ctrL + "}", gauge, 15 << 20},
		{ctr, "container_memory_cache{" + ctrL + "}", gauge, 10 << 20},
		{ctr, "container_memory_mapped_file{" + ctrL + "}", gauge, 1 << 20},
		{ctr, "container_memory_max_usage_bytes{" + ctrL + "}", gauge, 40 << 20},
		{ctr, "container_memory_failcnt{" + ctrL + "}", counter, 2},
		{ctr, "container_memory_failures_total{" + ctrL + ",pgfault,container}", counter, 900},
		{ctr, "container_memory_failures_total{" + ctrL + ",pgmajfault,hierarchy}", counter, 9},
		{ctr, "container_oom_events_total{" + ctrL + "}", counter, 1},
		{ctr, "container_memory_swap{" + ctrL + "}", gauge, 4096},
		{ctr, "container_processes{" + ctrL + "}", gauge, 2},
		{ctr, "container_threads{" + ctrL + "}", gauge, 5},
		{ctr, "container_threads_max{" + ctrL + "}", gauge, 100},
		{ctr, "container_pressure_cpu_waiting_seconds_total{" + ctrL + "}", counter, 2},
		{ctr, "container_pressure_cpu_stalled_seconds_total{" + ctrL + "}", counter, 1},
		{ctr, "container_pressure_memory_waiting_seconds_total{" + ctrL + "}", counter, 4},
		{ctr, "container_pressure_memory_stalled_seconds_total{" + ctrL + "}", counter, 3},
		{ctr, "container_pressure_io_waiting_seconds_total{" + ctrL + "}", counter, 6},
		{ctr, "container_pressure_io_stalled_seconds_total{" + ctrL + "}", counter, 5},
		{ctr, "container_fs_usage_bytes{" + ctrL + ",/var/lib/crib}", gauge, 8192},
		{ctr, "container_fs_limit_bytes{" + ctrL + ",/var/lib/crib}", gauge, 10 << 30},
		{ctr, "container_fs_inodes_total{" + ctrL + ",/var/lib/crib}", gauge, 1000},
		{ctr, "container_fs_inodes_free{" + ctrL + ",/var/lib/crib}", gauge, 600},
		{ctr, "container_spec_cpu_period{" + ctrL + "}", gauge, 50_000},
		{ctr, "container_spec_cpu_quota{" + ctrL + "}", gauge, 25_000},
		{ctr, "container_spec_cpu_shares{" + ctrL + "}", gauge, 512},
		{ctr, "container_spec_memory_limit_bytes{" + ctrL + "}", gauge, 64 << 20},
		{ctr, "container_spec_memory_swap_limit_bytes{" + ctrL + "}", gauge, 0},
	}
	for _, tt := range tests {
		m, ok := tt.set[tt.key]
		if !ok {
			t.Errorf("%s missing", tt.key)
			continue
		}
		if m.MetricType != tt.kind || m.GetValue().GetValue() != tt.want || m.Timestamp != 0 {
			t.Errorf("%s = %v %d at %d, want %v %d live", tt.key, m.MetricType, m.GetValue().GetValue(), m.Timestamp, tt.kind, tt.want)
		}
	}
	// The network is the pod's: containers share it and do not repeat it.
	for k := range ctr {
		if strings.HasPrefix(k, "container_network_") {
			t.Errorf("container reports %s", k)
		}
	}
}

// What a source lacks is left out, not reported as zero.
func TestBuildLeavesOutMissingFigures(t *testing.T) {
	v1 := fullSample()
	v1.CPU.Throttling, v1.CPU.Pressure, v1.Memory.Pressure, v1.IO, v1.Swap, v1.Memory.MaxUsage = nil, nil, nil, nil, nil, 0
	p := Pod{
		ID: "sb", Namespace: "ns", Name: "host-net",
		Containers: []Container{{ID: "c", Name: "c", Cgroup: v1, Layer: &Layer{Device: "/d"}}},
	}
	got := Build(p, now)
	names := map[string]bool{}
	for _, m := range got.Metrics {
		names[m.Name] = true
	}
	if len(got.Metrics) != 1 || !names["container_last_seen"] {
		t.Errorf("a pod without cgroup, network or creation time reports %v, want only container_last_seen", names)
	}
	ctr := series(got.ContainerMetrics[0].Metrics)
	const l = "c,c,,c,ns,host-net"
	for _, absent := range []string{
		"container_cpu_cfs_periods_total{" + l + "}",
		"container_pressure_cpu_waiting_seconds_total{" + l + "}",
		"container_pressure_io_stalled_seconds_total{" + l + "}",
		"container_memory_swap{" + l + "}",
		"container_memory_max_usage_bytes{" + l + "}",
		"container_spec_cpu_quota{" + l + "}",
		"container_fs_limit_bytes{" + l + ",/d}",
		"container_fs_inodes_free{" + l + ",/d}",
		"container_start_time_seconds{" + l + "}",
	} {
		if _, ok := ctr[absent]; ok {
			t.Errorf("%s reported from a source without it", absent)
		}
	}
	// Unset CRI resources read as the kernel's defaults.
	for _, m := range got.Metrics {
		if strings.HasPrefix(m.Name, "container_spec_") {
			t.Errorf("a pod reports %s", m.Name)
		}
	}
	for key, want := range map[string]uint64{
		"container_spec_cpu_period{" + l + "}":         defaultCPUPeriod,
		"container_spec_cpu_shares{" + l + "}":         defaultCPUShares,
		"container_spec_memory_limit_bytes{" + l + "}": 0,
	} {
		if m, ok := ctr[key]; !ok || m.GetValue().GetValue() != want {
			t.Errorf("%s = %v, want %d", key, m, want)
		}
	}
}

// Every metric Build emits is described, with as many label values as
// its descriptor has keys, and every descriptor is used by a full pod.
func TestDescriptors(t *testing.T) {
	descs := map[string]*runtimeapi.MetricDescriptor{}
	for _, d := range Descriptors() {
		if _, dup := descs[d.Name]; dup {
			t.Errorf("descriptor %s twice", d.Name)
		}
		descs[d.Name] = d
		if d.Help == "" {
			t.Errorf("descriptor %s has no help", d.Name)
		}
		keys := map[string]bool{}
		for _, k := range d.LabelKeys {
			if keys[k] {
				t.Errorf("descriptor %s has label %s twice", d.Name, k)
			}
			keys[k] = true
		}
		for _, k := range []string{"container", "id", "image", "name", "namespace", "pod"} {
			if !keys[k] {
				t.Errorf("descriptor %s lacks label %s", d.Name, k)
			}
		}
	}
	got := Build(fullPod(), now)
	all := append([]*runtimeapi.Metric{}, got.Metrics...)
	for _, c := range got.ContainerMetrics {
		all = append(all, c.Metrics...)
	}
	used := map[string]bool{}
	for _, m := range all {
		d, ok := descs[m.Name]
		if !ok {
			t.Errorf("metric %s has no descriptor", m.Name)
			continue
		}
		used[m.Name] = true
		if len(m.LabelValues) != len(d.LabelKeys) {
			t.Errorf("metric %s has %d label values for %d keys %v", m.Name, len(m.LabelValues), len(d.LabelKeys), d.LabelKeys)
		}
	}
	for name := range descs {
		if !used[name] {
			t.Errorf("descriptor %s is never reported", name)
		}
	}
}

// The kubelet turns descriptors and metrics into Prometheus metrics; a
// registry gathering them refuses invalid names, label mismatches and
// duplicate series.
func TestMetricsGatherAsPrometheus(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(criCollector{descs: Descriptors(), pods: []*runtimeapi.PodSandboxMetrics{
		Build(fullPod(), now),
		Build(func() Pod { p := fullPod(); p.ID, p.Name, p.Containers[0].ID = "sb2", "web2", "c2"; return p }(), now),
	}}); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	types := map[string]string{}
	for _, mf := range mfs {
		types[mf.GetName()] = mf.GetType().String()
	}
	for name, want := range map[string]string{
		"container_cpu_usage_seconds_total":     "COUNTER",
		"container_memory_working_set_bytes":    "GAUGE",
		"container_network_receive_bytes_total": "COUNTER",
	} {
		if types[name] != want {
			t.Errorf("%s gathered as %q, want %s", name, types[name], want)
		}
	}
}

// criCollector does what the kubelet's CRI metrics collector does.
type criCollector struct {
	descs []*runtimeapi.MetricDescriptor
	pods  []*runtimeapi.PodSandboxMetrics
}

func (c criCollector) promDescs() map[string]*prometheus.Desc {
	out := map[string]*prometheus.Desc{}
	for _, d := range c.descs {
		out[d.Name] = prometheus.NewDesc(d.Name, d.Help, d.LabelKeys, nil)
	}
	return out
}

func (c criCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.promDescs() {
		ch <- d
	}
}

func (c criCollector) Collect(ch chan<- prometheus.Metric) {
	descs := c.promDescs()
	send := func(m *runtimeapi.Metric) {
		typ := prometheus.CounterValue
		if m.MetricType == runtimeapi.MetricType_GAUGE {
			typ = prometheus.GaugeValue
		}
		pm, err := prometheus.NewConstMetric(descs[m.Name], typ, float64(m.GetValue().GetValue()), m.LabelValues...)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(descs[m.Name], err)
			return
		}
		ch <- pm
	}
	for _, p := range c.pods {
		for _, m := range p.Metrics {
			send(m)
		}
		for _, cm := range p.ContainerMetrics {
			for _, m := range cm.Metrics {
				send(m)
			}
		}
	}
}

// Times are whole seconds, truncated: never ahead of the kernel's figure.
func TestSeconds(t *testing.T) {
	for nanos, want := range map[uint64]uint64{
		0:                    0,
		999_999_999:          0,
		1_000_000_000:        1,
		1_999_999_999:        1,
		7_900_000_000:        7,
		18446744073709551615: 18446744073,
	} {
		if got := seconds(nanos); got != want {
			t.Errorf("seconds(%d) = %d, want %d", nanos, got, want)
		}
	}
}

// What Prometheus gets through the kubelet's conversion (the CRI value as
// a float, unscaled) is in seconds: 7.9 s of CPU reads 7, not 7.9e9.
func TestSecondsAsTheKubeletExportsThem(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	p := fullPod()
	p.Containers = p.Containers[:1]
	p.Containers[0].Cgroup.CPU.UsageNanos = 1_999_999_999
	if err := reg.Register(criCollector{descs: Descriptors(), pods: []*runtimeapi.PodSandboxMetrics{Build(p, now)}}); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	// The pod's and the container's series of each family, by container label.
	got := map[string]map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			ctr := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "container" {
					ctr = l.GetValue()
				}
			}
			if got[mf.GetName()] == nil {
				got[mf.GetName()] = map[string]float64{}
			}
			got[mf.GetName()][ctr] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	for _, w := range []struct {
		name, container string
		want            float64
	}{
		{"container_cpu_usage_seconds_total", "", 7},
		{"container_cpu_usage_seconds_total", "app", 1},
		{"container_cpu_user_seconds_total", "app", 5},
		{"container_cpu_system_seconds_total", "app", 2},
		{"container_cpu_cfs_throttled_seconds_total", "app", 3},
		{"container_pressure_cpu_waiting_seconds_total", "app", 2},
		{"container_pressure_memory_stalled_seconds_total", "app", 3},
		{"container_pressure_io_waiting_seconds_total", "app", 6},
		{"container_pressure_io_stalled_seconds_total", "app", 5},
		{"container_pressure_io_waiting_seconds_total", "", 6},
		{"container_start_time_seconds", "app", float64(now.Unix() - 30)},
	} {
		if v, ok := got[w.name][w.container]; !ok || v != w.want {
			t.Errorf("%s{container=%q} gathered as %v (present %v), want %v", w.name, w.container, v, ok, w.want)
		}
	}
}
