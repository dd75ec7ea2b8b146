package statusapi

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The agent's metrics pass promlint, as client_golang's users expect.
func TestMetricsLint(t *testing.T) {
	m := NewMetrics()
	m.ObservePodStart(time.Second)
	m.ObserveSync(time.Millisecond)
	m.ContainerRestarted("default", "web", "app")
	m.ProbeResult("readiness", "success")
	m.Pods.Set(1, "Running")
	reg, err := m.Registry()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	if n := testutil.CollectAndCount(m.ContainerRestarts.vec, "crib_agent_container_restarts_total"); n != 1 {
		t.Errorf("%d restart series, want 1", n)
	}
}
