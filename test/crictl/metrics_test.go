package crictl

import (
	"strings"
	"testing"

	"github.com/crib-dev/crib/internal/testutil"
)

// TestCrictlMetrics: `crictl metricdescs` lists cAdvisor's metric names and
// `crictl metricsp` shows a running pod's and container's metrics, each
// named by a descriptor.
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
	for _, want := range []string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes", "container_network_receive_bytes_total"} {
		if _, ok := keys[want]; !ok {
			t.Errorf("crictl metricdescs lacks %s", want)
		}
	}

	pod := writeJSON(t, dir, "pod.json", map[string]any{
		"metadata": map[string]any{"name": "metered", "namespace": "crictl", "uid": "metered-uid"},
		"linux":    map[string]any{},
	})
	podID := strings.TrimSpace(c.run("runp", pod))
	ctr := writeJSON(t, dir, "ctr.json", map[string]any{
		"metadata": map[string]any{"name": "sleeper"},
		"image":    map[string]any{"image": img.Ref},
		"command":  []string{"sleep", "3600"},
		"linux":    map[string]any{},
	})
	ctrID := strings.TrimSpace(c.run("create", podID, ctr, pod))
	c.run("start", ctrID)
	t.Cleanup(func() { _, _ = c.try("rmp", "-f", podID) })

	type metric struct {
		Name        string   `json:"name"`
		LabelValues []string `json:"labelValues"`
	}
	var out struct {
		PodMetrics []struct {
			PodSandboxID     string   `json:"podSandboxId"`
			Metrics          []metric `json:"metrics"`
			ContainerMetrics []struct {
				ContainerID string   `json:"containerId"`
				Metrics     []metric `json:"metrics"`
			} `json:"containerMetrics"`
		} `json:"podMetrics"`
	}
	decode(t, c.run("metricsp", "-o", "json"), &out)
	if len(out.PodMetrics) != 1 || out.PodMetrics[0].PodSandboxID != podID {
		t.Fatalf("crictl metricsp shows %+v, want pod %s", out.PodMetrics, podID)
	}
	p := out.PodMetrics[0]
	if len(p.ContainerMetrics) != 1 || p.ContainerMetrics[0].ContainerID != ctrID {
		t.Fatalf("crictl metricsp shows containers %+v, want %s", p.ContainerMetrics, ctrID)
	}
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
}
