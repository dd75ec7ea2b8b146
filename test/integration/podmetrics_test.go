package integration

import (
	"io"
	"net"
	"slices"
	"sort"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestPodSandboxMetrics: a running pod's CPU, memory and network metrics
// come back from ListPodSandboxMetrics with plausible values and the
// labels the kubelet's /metrics/cadvisor has, every one described by
// ListMetricDescriptors; PodSandboxStats shows the same interface, and
// StreamPodSandboxMetrics sends the same metrics.
func TestPodSandboxMetrics(t *testing.T) {
	e := newEnv(t)
	pod := e.podConfig("metered")
	podID := e.runPod(pod)
	cfg := e.ctrConfig("spinner", "sh", "-c", "while :; do :; done")
	const memLimit = 64 << 20
	cfg.Linux.Resources = &runtimeapi.LinuxContainerResources{CpuPeriod: 100_000, CpuQuota: 50_000, MemoryLimitInBytes: memLimit}
	id := e.run(podID, pod, cfg)
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	started := time.Now()

	// Traffic the pod's eth0 sees both ways: a SYN in, a reset out.
	st, err := e.rt().PodSandboxStatus(e.ctx(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: podID})
	if err != nil {
		t.Fatal(err)
	}
	if conn, err := net.DialTimeout("tcp", net.JoinHostPort(st.GetStatus().GetNetwork().GetIp(), "9"), 2*time.Second); err == nil {
		_, _ = io.WriteString(conn, "x")
		conn.Close()
	}

	dresp, err := e.rt().ListMetricDescriptors(e.ctx(), &runtimeapi.ListMetricDescriptorsRequest{})
	if err != nil {
		t.Fatalf("ListMetricDescriptors: %v", err)
	}
	keys := map[string][]string{}
	for _, d := range dresp.Descriptors {
		keys[d.Name] = d.LabelKeys
	}

	// labelled finds the value of the metric name whose labels include want.
	labelled := func(ms []*runtimeapi.Metric, name string, want map[string]string) (uint64, bool) {
		for _, m := range ms {
			if m.Name != name {
				continue
			}
			ks, ok := keys[m.Name]
			if !ok || len(ks) != len(m.LabelValues) {
				t.Fatalf("metric %s has labels %v for descriptor keys %v", m.Name, m.LabelValues, ks)
			}
			got := map[string]string{}
			for i, k := range ks {
				got[k] = m.LabelValues[i]
			}
			match := true
			for k, v := range want {
				match = match && got[k] == v
			}
			if match {
				return m.GetValue().GetValue(), true
			}
		}
		return 0, false
	}
	podLabels := map[string]string{"pod": "metered", "namespace": "it", "id": podID, "container": ""}
	ctrLabels := map[string]string{"pod": "metered", "namespace": "it", "id": id, "name": id, "container": "spinner", "image": e.img.Ref}
	eth0 := map[string]string{"pod": "metered", "namespace": "it", "container": "", "interface": "eth0"}

	var pm *runtimeapi.PodSandboxMetrics
	var ctr []*runtimeapi.Metric
	eventually(t, 60*time.Second, "a second of CPU and traffic both ways in the pod's metrics", func() bool {
		resp, err := e.rt().ListPodSandboxMetrics(e.ctx(), &runtimeapi.ListPodSandboxMetricsRequest{})
		if err != nil {
			t.Fatalf("ListPodSandboxMetrics: %v", err)
		}
		pm = nil
		for _, p := range resp.PodMetrics {
			if p.PodSandboxId == podID {
				pm = p
			}
		}
		if pm == nil || len(pm.ContainerMetrics) != 1 || pm.ContainerMetrics[0].ContainerId != id {
			t.Fatalf("pod metrics %v, want pod %s with container %s", pm, podID, id)
		}
		ctr = pm.ContainerMetrics[0].Metrics
		cpu, _ := labelled(ctr, "container_cpu_usage_seconds_total", ctrLabels)
		rx, _ := labelled(pm.Metrics, "container_network_receive_bytes_total", eth0)
		tx, _ := labelled(pm.Metrics, "container_network_transmit_bytes_total", eth0)
		return cpu >= 1 && rx > 0 && tx > 0
	})

	for _, m := range append(append([]*runtimeapi.Metric{}, pm.Metrics...), ctr...) {
		if _, ok := keys[m.Name]; !ok {
			t.Errorf("metric %s has no descriptor", m.Name)
		}
	}
	elapsed := uint64(time.Since(started).Seconds()) + 1
	if cpu, _ := labelled(ctr, "container_cpu_usage_seconds_total", ctrLabels); cpu > elapsed {
		t.Errorf("half a core for %ds used %d CPU seconds", elapsed, cpu)
	}
	if ws, ok := labelled(ctr, "container_memory_working_set_bytes", ctrLabels); !ok || ws == 0 || ws > memLimit {
		t.Errorf("container working set = %d (reported %v), want above 0 and within its %d limit", ws, ok, memLimit)
	}
	if ws, ok := labelled(pm.Metrics, "container_memory_working_set_bytes", podLabels); !ok || ws == 0 {
		t.Errorf("pod working set = %d (reported %v), want above 0", ws, ok)
	}
	if n, ok := labelled(ctr, "container_threads", ctrLabels); !ok || n < 1 {
		t.Errorf("container threads = %d (reported %v), want at least 1", n, ok)
	}
	for name, want := range map[string]uint64{
		"container_spec_memory_limit_bytes": memLimit,
		"container_spec_cpu_quota":          50_000,
		"container_spec_cpu_period":         100_000,
	} {
		if v, ok := labelled(ctr, name, ctrLabels); !ok || v != want {
			t.Errorf("%s = %d (reported %v), want %d", name, v, ok, want)
		}
	}
	if v, ok := labelled(ctr, "container_fs_limit_bytes", ctrLabels); !ok || v == 0 {
		t.Errorf("container_fs_limit_bytes = %d (reported %v), want the filesystem's size", v, ok)
	}
	start, _ := labelled(ctr, "container_start_time_seconds", ctrLabels)
	if d := time.Since(time.Unix(int64(start), 0)); d < 0 || d > time.Minute {
		t.Errorf("container start time %d is %v ago", start, d)
	}
	for _, m := range ctr {
		if m.Name == "container_network_receive_bytes_total" {
			t.Error("a container repeats its pod's network metrics")
		}
	}

	// The pod's stats carry the same interface.
	ps, err := e.rt().PodSandboxStats(e.ctx(), &runtimeapi.PodSandboxStatsRequest{PodSandboxId: podID})
	if err != nil {
		t.Fatalf("PodSandboxStats: %v", err)
	}
	if n := ps.GetStats().GetLinux().GetNetwork().GetDefaultInterface(); n.GetName() != "eth0" || n.GetRxBytes().GetValue() == 0 || n.GetTxBytes().GetValue() == 0 {
		t.Errorf("pod stats' default interface = %v, want eth0 with traffic both ways", n)
	}

	stream, err := e.rt().StreamPodSandboxMetrics(e.ctx(), &runtimeapi.StreamPodSandboxMetricsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var streamed *runtimeapi.PodSandboxMetrics
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("StreamPodSandboxMetrics: %v", err)
		}
		for _, p := range resp.PodSandboxMetrics {
			if p.PodSandboxId == podID {
				streamed = p
			}
		}
	}
	if streamed == nil || len(streamed.ContainerMetrics) != 1 {
		t.Fatalf("streamed metrics %v, want pod %s with its container", streamed, podID)
	}
	if got, want := metricNames(streamed.Metrics, streamed.ContainerMetrics[0].Metrics), metricNames(pm.Metrics, ctr); !slices.Equal(got, want) {
		t.Errorf("streamed metric names %v, listed %v", got, want)
	}
}

// metricNames are the distinct metric names in lists, sorted.
func metricNames(lists ...[]*runtimeapi.Metric) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lists {
		for _, m := range l {
			if !seen[m.Name] {
				seen[m.Name] = true
				out = append(out, m.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}
