package sandboxmetrics

import (
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/kernelstats"
)

// baseLabelKeys label every metric, in cAdvisor's order. For a container
// they are its name, id, image, id again (cAdvisor's name label is the
// runtime's name of the container, its id for CRI runtimes), the pod's
// namespace and name; a pod's own metrics have no container, image or
// name, as cAdvisor's pod cgroup has none.
var baseLabelKeys = []string{"container", "id", "image", "name", "namespace", "pod"}

const (
	counter = runtimeapi.MetricType_COUNTER
	gauge   = runtimeapi.MetricType_GAUGE
)

// source is what one pod's or one container's metrics are taken from;
// each field may be missing.
type source struct {
	now     time.Time
	sample  *kernelstats.Sample
	network *kernelstats.Network
	// Container only.
	layer     *Layer
	resources *runtimeapi.LinuxContainerResources
	// started is when the container started or the pod was made.
	started time.Time
}

// value is one series of a family: its value and the values of the
// family's extra label keys.
type value struct {
	v      uint64
	labels []string
}

// family is one metric: its descriptor and how its series come from a
// source. A family with nothing to report returns no values.
type family struct {
	name, help string
	kind       runtimeapi.MetricType
	// extra are the label keys after baseLabelKeys.
	extra  []string
	values func(source) []value
}

func (f family) descriptor() *runtimeapi.MetricDescriptor {
	keys := append(append([]string{}, baseLabelKeys...), f.extra...)
	return &runtimeapi.MetricDescriptor{Name: f.name, Help: f.help, LabelKeys: keys}
}

// one is a family's single series without extra labels.
func one(v uint64) []value { return []value{{v: v}} }

// seconds is a time for a *_seconds* metric: the CRI carries integers and
// the kubelet exports each as is (a float of the integer, unscaled), so a
// finer unit would read as that many times more seconds. Truncated, as
// containerd and CRI-O do: a counter never reads ahead of the kernel's
// figure. The stats RPCs keep the nanoseconds.
func seconds(nanos uint64) uint64 { return nanos / uint64(time.Second) }

// cpu, memory, pids, cpuThrottling: a family whose figures are missing
// reports nothing.
func cpu(f func(*kernelstats.CPU) []value) func(source) []value {
	return func(s source) []value {
		if s.sample == nil || s.sample.CPU == nil {
			return nil
		}
		return f(s.sample.CPU)
	}
}

func throttling(f func(*kernelstats.Throttling) uint64) func(source) []value {
	return cpu(func(c *kernelstats.CPU) []value {
		if c.Throttling == nil {
			return nil
		}
		return one(f(c.Throttling))
	})
}

func memory(f func(*kernelstats.Memory) []value) func(source) []value {
	return func(s source) []value {
		if s.sample == nil || s.sample.Memory == nil {
			return nil
		}
		return f(s.sample.Memory)
	}
}

func pids(f func(*kernelstats.Pids) uint64) func(source) []value {
	return func(s source) []value {
		if s.sample == nil || s.sample.Pids == nil {
			return nil
		}
		return one(f(s.sample.Pids))
	}
}

// pressure reports a PSI total: waiting is "some" (a task waited),
// stalled is "full" (all did), as cAdvisor names them.
func pressure(of func(kernelstats.Sample) *kernelstats.Pressure, full bool) func(source) []value {
	return func(s source) []value {
		if s.sample == nil {
			return nil
		}
		p := of(*s.sample)
		if p == nil {
			return nil
		}
		if full {
			return one(seconds(p.Full.TotalNanos))
		}
		return one(seconds(p.Some.TotalNanos))
	}
}

func cpuPressure(s kernelstats.Sample) *kernelstats.Pressure {
	if s.CPU == nil {
		return nil
	}
	return s.CPU.Pressure
}

func memoryPressure(s kernelstats.Sample) *kernelstats.Pressure {
	if s.Memory == nil {
		return nil
	}
	return s.Memory.Pressure
}

func ioPressure(s kernelstats.Sample) *kernelstats.Pressure {
	if s.IO == nil {
		return nil
	}
	return s.IO.Pressure
}

// iface reports a counter of every interface, labelled with its name.
func iface(f func(kernelstats.Interface) uint64) func(source) []value {
	return func(s source) []value {
		if s.network == nil {
			return nil
		}
		var vs []value
		for _, i := range s.network.Interfaces {
			vs = append(vs, value{v: f(i), labels: []string{i.Name}})
		}
		return vs
	}
}

// layer reports a figure of the writable layer or its filesystem,
// labelled with the filesystem, when ok.
func layer(f func(*Layer) (uint64, bool)) func(source) []value {
	return func(s source) []value {
		if s.layer == nil {
			return nil
		}
		v, ok := f(s.layer)
		if !ok {
			return nil
		}
		return []value{{v: v, labels: []string{s.layer.Device}}}
	}
}

// capacity is l's filesystem size, zero when unknown.
func capacity(l *Layer) kernelstats.Capacity {
	if l.Capacity == nil {
		return kernelstats.Capacity{}
	}
	return *l.Capacity
}

func resources(f func(*runtimeapi.LinuxContainerResources) []value) func(source) []value {
	return func(s source) []value {
		if s.resources == nil {
			return nil
		}
		return f(s.resources)
	}
}

// Kernel defaults for a container whose CRI resources leave them unset.
const (
	defaultCPUPeriod = 100_000
	defaultCPUShares = 1024
)

// families are every metric crib reports, pod's and containers' alike;
// what a source lacks is left out.
var families = []family{
	{name: "container_last_seen", help: "When the runtime last read the cgroup, in seconds since the epoch.", kind: gauge,
		values: func(s source) []value { return one(uint64(s.now.Unix())) }},
	{name: "container_start_time_seconds", help: "When the container started (the pod: was made), in seconds since the epoch.", kind: gauge,
		values: func(s source) []value {
			if s.started.IsZero() {
				return nil
			}
			return one(uint64(s.started.Unix()))
		}},

	// CPU.
	{name: "container_cpu_usage_seconds_total", help: "CPU time used in all modes, in whole seconds.", kind: counter,
		extra: []string{"cpu"},
		values: cpu(func(c *kernelstats.CPU) []value {
			return []value{{v: seconds(c.UsageNanos), labels: []string{"total"}}}
		})},
	{name: "container_cpu_user_seconds_total", help: "CPU time used in user mode, in whole seconds.", kind: counter,
		values: cpu(func(c *kernelstats.CPU) []value { return one(seconds(c.UserNanos)) })},
	{name: "container_cpu_system_seconds_total", help: "CPU time used in kernel mode, in whole seconds.", kind: counter,
		values: cpu(func(c *kernelstats.CPU) []value { return one(seconds(c.SystemNanos)) })},
	{name: "container_cpu_cfs_periods_total", help: "CFS bandwidth periods that have elapsed with tasks runnable.", kind: counter,
		values: throttling(func(t *kernelstats.Throttling) uint64 { return t.Periods })},
	{name: "container_cpu_cfs_throttled_periods_total", help: "CFS bandwidth periods in which the quota ran out.", kind: counter,
		values: throttling(func(t *kernelstats.Throttling) uint64 { return t.ThrottledPeriods })},
	{name: "container_cpu_cfs_throttled_seconds_total", help: "Time the CFS quota held tasks back, in whole seconds.", kind: counter,
		values: throttling(func(t *kernelstats.Throttling) uint64 { return seconds(t.ThrottledNanos) })},

	// Memory.
	{name: "container_memory_usage_bytes", help: "Memory charged to the cgroup now, page cache included, in bytes.", kind: gauge,
		values: memory(func(m *kernelstats.Memory) []value { return one(m.Usage) })},
	{name: "container_memory_working_set_bytes", help: "Memory usage less the inactive page cache, in bytes: what the kubelet evicts on.", kind: gauge,
		values: memory(func(m *kernelstats.Memory) []value { return one(m.WorkingSet) })},
	{name: "container_memory_rss", help: "Anonymous memory, in bytes.", kind: gauge,
		values: memory(func(m *kernelstats.Memory) []value { return one(m.RSS) })},
	{name: "container_memory_cache", help: "Page cache, in bytes.", kind: gauge,
		values: memory(func(m *kernelstats.Memory) []value { return one(m.Cache) })},
	{name: "container_memory_mapped_file", help: "Page cache mapped into processes, in bytes.", kind: gauge,
		values: memory(func(m *kernelstats.Memory) []value { return one(m.MappedFile) })},
	{name: "container_memory_max_usage_bytes", help: "Peak memory usage, in bytes.", kind: gauge,
		values: memory(func(m *kernelstats.Memory) []value {
			if m.MaxUsage == 0 {
				return nil
			}
			return one(m.MaxUsage)
		})},
	{name: "container_memory_failcnt", help: "Times the memory usage reached its limit.", kind: counter,
		values: memory(func(m *kernelstats.Memory) []value { return one(m.Failcnt) })},
	{name: "container_memory_failures_total", help: "Page faults, minor (pgfault) and major (pgmajfault).", kind: counter,
		extra: []string{"failure_type", "scope"},
		values: memory(func(m *kernelstats.Memory) []value {
			// The cgroup's counters include its children's: the same
			// figures serve both scopes, as cAdvisor gives them.
			return []value{
				{v: m.PageFaults, labels: []string{"pgfault", "container"}},
				{v: m.PageFaults, labels: []string{"pgfault", "hierarchy"}},
				{v: m.MajorPageFaults, labels: []string{"pgmajfault", "container"}},
				{v: m.MajorPageFaults, labels: []string{"pgmajfault", "hierarchy"}},
			}
		})},
	{name: "container_oom_events_total", help: "Processes of the cgroup the OOM killer killed.", kind: counter,
		values: memory(func(m *kernelstats.Memory) []value { return one(m.OOMKills) })},
	{name: "container_memory_swap", help: "Swap used, in bytes.", kind: gauge,
		values: func(s source) []value {
			if s.sample == nil || s.sample.Swap == nil {
				return nil
			}
			return one(s.sample.Swap.Usage)
		}},

	// Processes.
	{name: "container_processes", help: "Processes in the cgroup and its children.", kind: gauge,
		values: pids(func(p *kernelstats.Pids) uint64 { return p.Processes })},
	{name: "container_threads", help: "Tasks (threads) in the cgroup and its children.", kind: gauge,
		values: pids(func(p *kernelstats.Pids) uint64 { return p.Current })},
	{name: "container_threads_max", help: "The cgroup's task limit; 0 is no limit.", kind: gauge,
		values: pids(func(p *kernelstats.Pids) uint64 {
			if !p.Limited {
				return 0
			}
			return p.Limit
		})},

	// Pressure stall information (cgroup v2).
	{name: "container_pressure_cpu_waiting_seconds_total", help: "Time some tasks stalled waiting for a CPU (PSI some), in whole seconds.", kind: counter,
		values: pressure(cpuPressure, false)},
	{name: "container_pressure_cpu_stalled_seconds_total", help: "Time all tasks stalled waiting for a CPU (PSI full), in whole seconds.", kind: counter,
		values: pressure(cpuPressure, true)},
	{name: "container_pressure_memory_waiting_seconds_total", help: "Time some tasks stalled on memory (PSI some), in whole seconds.", kind: counter,
		values: pressure(memoryPressure, false)},
	{name: "container_pressure_memory_stalled_seconds_total", help: "Time all tasks stalled on memory (PSI full), in whole seconds.", kind: counter,
		values: pressure(memoryPressure, true)},
	{name: "container_pressure_io_waiting_seconds_total", help: "Time some tasks stalled on block I/O (PSI some), in whole seconds.", kind: counter,
		values: pressure(ioPressure, false)},
	{name: "container_pressure_io_stalled_seconds_total", help: "Time all tasks stalled on block I/O (PSI full), in whole seconds.", kind: counter,
		values: pressure(ioPressure, true)},

	// Network, the pod's: its containers share its namespace.
	{name: "container_network_receive_bytes_total", help: "Bytes the interface received.", kind: counter,
		extra: []string{"interface"}, values: iface(func(i kernelstats.Interface) uint64 { return i.RxBytes })},
	{name: "container_network_receive_packets_total", help: "Packets the interface received.", kind: counter,
		extra: []string{"interface"}, values: iface(func(i kernelstats.Interface) uint64 { return i.RxPackets })},
	{name: "container_network_receive_packets_dropped_total", help: "Received packets the interface dropped.", kind: counter,
		extra: []string{"interface"}, values: iface(func(i kernelstats.Interface) uint64 { return i.RxDropped })},
	{name: "container_network_receive_errors_total", help: "Errors the interface met receiving.", kind: counter,
		extra: []string{"interface"}, values: iface(func(i kernelstats.Interface) uint64 { return i.RxErrors })},
	{name: "container_network_transmit_bytes_total", help: "Bytes the interface sent.", kind: counter,
		extra: []string{"interface"}, values: iface(func(i kernelstats.Interface) uint64 { return i.TxBytes })},
	{name: "container_network_transmit_packets_total", help: "Packets the interface sent.", kind: counter,
		extra: []string{"interface"}, values: iface(func(i kernelstats.Interface) uint64 { return i.TxPackets })},
	{name: "container_network_transmit_packets_dropped_total", help: "Packets to send the interface dropped.", kind: counter,
		extra: []string{"interface"}, values: iface(func(i kernelstats.Interface) uint64 { return i.TxDropped })},
	{name: "container_network_transmit_errors_total", help: "Errors the interface met sending.", kind: counter,
		extra: []string{"interface"}, values: iface(func(i kernelstats.Interface) uint64 { return i.TxErrors })},

	// File system: the container's writable layer, on the filesystem
	// named by its mountpoint.
	{name: "container_fs_usage_bytes", help: "Bytes the container's writable layer holds on the filesystem.", kind: gauge,
		extra: []string{"device"}, values: layer(func(l *Layer) (uint64, bool) { return l.Bytes, true })},
	{name: "container_fs_limit_bytes", help: "Size of the writable layer's filesystem, in bytes.", kind: gauge,
		extra: []string{"device"}, values: layer(func(l *Layer) (uint64, bool) { return capacity(l).Bytes, l.Capacity != nil })},
	{name: "container_fs_inodes_total", help: "Inodes of the writable layer's filesystem.", kind: gauge,
		extra: []string{"device"}, values: layer(func(l *Layer) (uint64, bool) { return capacity(l).Inodes, l.Capacity != nil })},
	{name: "container_fs_inodes_free", help: "Free inodes of the writable layer's filesystem.", kind: gauge,
		extra: []string{"device"}, values: layer(func(l *Layer) (uint64, bool) { return capacity(l).InodesFree, l.Capacity != nil })},
	// The container's resources as the CRI set them.
	{name: "container_spec_cpu_period", help: "The container's CFS period, in microseconds.", kind: gauge,
		values: resources(func(r *runtimeapi.LinuxContainerResources) []value {
			if r.CpuPeriod <= 0 {
				return one(defaultCPUPeriod)
			}
			return one(uint64(r.CpuPeriod))
		})},
	{name: "container_spec_cpu_quota", help: "The container's CFS quota per period, in microseconds.", kind: gauge,
		values: resources(func(r *runtimeapi.LinuxContainerResources) []value {
			if r.CpuQuota <= 0 {
				return nil
			}
			return one(uint64(r.CpuQuota))
		})},
	{name: "container_spec_cpu_shares", help: "The container's CPU shares.", kind: gauge,
		values: resources(func(r *runtimeapi.LinuxContainerResources) []value {
			if r.CpuShares <= 0 {
				return one(defaultCPUShares)
			}
			return one(uint64(r.CpuShares))
		})},
	{name: "container_spec_memory_limit_bytes", help: "The container's memory limit in bytes; 0 is no limit.", kind: gauge,
		values: resources(func(r *runtimeapi.LinuxContainerResources) []value { return one(positive(r.MemoryLimitInBytes)) })},
	{name: "container_spec_memory_swap_limit_bytes", help: "The container's memory and swap limit in bytes; 0 is no limit.", kind: gauge,
		values: resources(func(r *runtimeapi.LinuxContainerResources) []value { return one(positive(r.MemorySwapLimitInBytes)) })},
}

// positive is v, or 0 (no limit) for 0 and the negative "unlimited".
func positive(v int64) uint64 {
	if v <= 0 {
		return 0
	}
	return uint64(v)
}
