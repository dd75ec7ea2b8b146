package crictl

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crib-dev/crib/internal/testutil"
)

// TestCrictlMetrics: `crictl metricdescs` lists cAdvisor's metric names and
// `crictl metricsp` shows a running pod's and container's metrics, each
// named by a descriptor; its CPU seconds are the whole seconds of the
// nanoseconds `crictl stats` shows, and on cgroup v2 both show the
// container's I/O pressure.
func TestCrictlMetrics(t *testing.T) {
	testutil.RequiresRoot(t)
	bin := findCrictl(t)
	img := testutil.Busybox(t)
	d := testutil.StartDaemon(t, testutil.Options{Image: &img})
	c := &cli{t: t, bin: bin, sock: d.Socket}
	dir := t.TempDir()

	var descs struct {
		Descriptors []struct {
			Name      string   `json:"name"`
			LabelKeys []string `json:"labelKeys"`
		} `json:"descriptors"`
	}
	decode(t, c.run("metricdescs", "-o", "json"), &descs)
	keys := map[string]int{}
	for _, d := range descs.Descriptors {
		keys[d.Name] = len(d.LabelKeys)
	}
	ioNames := []string{"container_pressure_io_waiting_seconds_total", "container_pressure_io_stalled_seconds_total"}
	for _, want := range append([]string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes", "container_network_receive_bytes_total"}, ioNames...) {
		if _, ok := keys[want]; !ok {
			t.Errorf("crictl metricdescs lacks %s", want)
		}
	}

	pod := writeJSON(t, dir, "pod.json", map[string]any{
		"metadata": map[string]any{"name": "metered", "namespace": "crictl", "uid": "metered-uid"},
		"linux":    map[string]any{},
	})
	podID := strings.TrimSpace(c.run("runp", pod))
	// A synced write (I/O pressure), then a busy loop.
	ctr := writeJSON(t, dir, "ctr.json", map[string]any{
		"metadata": map[string]any{"name": "spinner"},
		"image":    map[string]any{"image": img.Ref},
		"command":  []string{"sh", "-c", "dd if=/dev/zero of=/written bs=1M count=16 conv=fsync; while :; do :; done"},
		"linux":    map[string]any{},
	})
	ctrID := strings.TrimSpace(c.run("create", podID, ctr, pod))
	c.run("start", ctrID)
	t.Cleanup(func() { _, _ = c.try("rmp", "-f", podID) })

	type metric struct {
		Name        string   `json:"name"`
		LabelValues []string `json:"labelValues"`
		Value       struct {
			Value u64 `json:"value"`
		} `json:"value"`
	}
	type podMetrics struct {
		PodSandboxID     string   `json:"podSandboxId"`
		Metrics          []metric `json:"metrics"`
		ContainerMetrics []struct {
			ContainerID string   `json:"containerId"`
			Metrics     []metric `json:"metrics"`
		} `json:"containerMetrics"`
	}
	metricsp := func() podMetrics {
		var out struct {
			PodMetrics []podMetrics `json:"podMetrics"`
		}
		decode(t, c.run("metricsp", "-o", "json"), &out)
		if len(out.PodMetrics) != 1 || out.PodMetrics[0].PodSandboxID != podID {
			t.Fatalf("crictl metricsp shows %+v, want pod %s", out.PodMetrics, podID)
		}
		p := out.PodMetrics[0]
		if len(p.ContainerMetrics) != 1 || p.ContainerMetrics[0].ContainerID != ctrID {
			t.Fatalf("crictl metricsp shows containers %+v, want %s", p.ContainerMetrics, ctrID)
		}
		return p
	}
	// value is the value of the first series of name, and whether there is one.
	value := func(ms []metric, name string) (uint64, bool) {
		for _, m := range ms {
			if m.Name == name {
				return uint64(m.Value.Value), true
			}
		}
		return 0, false
	}
	type psiData struct {
		Total u64 `json:"total"`
	}
	type stats struct {
		Stats []struct {
			CPU struct {
				UsageCoreNanoSeconds struct {
					Value u64 `json:"value"`
				} `json:"usageCoreNanoSeconds"`
			} `json:"cpu"`
			IO *struct {
				PSI *struct {
					Some, Full *psiData
				} `json:"psi"`
			} `json:"io"`
		} `json:"stats"`
	}
	crictlStats := func() stats {
		var out stats
		decode(t, c.run("stats", "-o", "json", "--id", ctrID), &out)
		if len(out.Stats) != 1 {
			t.Fatalf("crictl stats --id %s shows %d containers", ctrID, len(out.Stats))
		}
		return out
	}

	p := metricsp()
	seen := map[string]bool{}
	for _, m := range append(append([]metric{}, p.Metrics...), p.ContainerMetrics[0].Metrics...) {
		seen[m.Name] = true
		n, ok := keys[m.Name]
		if !ok || n != len(m.LabelValues) {
			t.Errorf("metric %s has %d label values, its descriptor %d keys (described: %v)", m.Name, len(m.LabelValues), n, ok)
		}
	}
	for _, want := range []string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes", "container_network_receive_bytes_total", "container_last_seen", "container_spec_cpu_shares"} {
		if !seen[want] {
			t.Errorf("crictl metricsp lacks %s", want)
		}
	}

	// A second of CPU reads 1 or more, the whole seconds of what crictl
	// stats shows just before and just after.
	deadline := time.Now().Add(testutil.Patience(60 * time.Second))
	for {
		if cpu, _ := value(metricsp().ContainerMetrics[0].Metrics, "container_cpu_usage_seconds_total"); cpu >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the container's container_cpu_usage_seconds_total did not reach 1 second")
		}
		time.Sleep(500 * time.Millisecond)
	}
	before := crictlStats().Stats[0]
	ctrNow := metricsp().ContainerMetrics[0].Metrics
	after := crictlStats().Stats[0]
	wholeSeconds := func(t *testing.T, name string, lo, hi u64) {
		t.Helper()
		got, ok := value(ctrNow, name)
		if !ok || got < uint64(lo)/uint64(time.Second) || got > uint64(hi)/uint64(time.Second) {
			t.Errorf("%s = %d (reported %v), not the whole seconds of a time between %d and %d ns", name, got, ok, lo, hi)
		}
	}
	wholeSeconds(t, "container_cpu_usage_seconds_total", before.CPU.UsageCoreNanoSeconds.Value, after.CPU.UsageCoreNanoSeconds.Value)

	t.Run("io pressure", func(t *testing.T) {
		if !testutil.Unified() {
			for _, name := range ioNames {
				if v, ok := value(ctrNow, name); ok {
					t.Errorf("%s = %d on cgroup v1, which has no I/O pressure per cgroup", name, v)
				}
			}
			if before.IO != nil {
				t.Errorf("crictl stats shows I/O pressure on cgroup v1: %+v", *before.IO)
			}
			t.Skip("cgroup v1 host: the kernel keeps pressure stall information per cgroup on v2 only (none is reported here, as checked); the VM's run checks it")
		}
		if before.IO == nil || after.IO == nil {
			t.Fatal("crictl stats shows no io on cgroup v2")
		}
		if before.IO.PSI == nil || before.IO.PSI.Some == nil || before.IO.PSI.Full == nil || after.IO.PSI == nil || after.IO.PSI.Some == nil || after.IO.PSI.Full == nil {
			t.Fatalf("crictl stats shows io %+v, then %+v; want some and full pressure", *before.IO, *after.IO)
		}
		wholeSeconds(t, ioNames[0], before.IO.PSI.Some.Total, after.IO.PSI.Some.Total)
		wholeSeconds(t, ioNames[1], before.IO.PSI.Full.Total, after.IO.PSI.Full.Total)
	})
}

// u64 is a uint64 of crictl's JSON, where protobuf's JSON writes it as a
// string.
type u64 uint64

func (u *u64) UnmarshalJSON(b []byte) error {
	n, err := strconv.ParseUint(strings.Trim(string(b), `"`), 10, 64)
	*u = u64(n)
	return err
}
