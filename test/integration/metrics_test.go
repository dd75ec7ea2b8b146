package integration

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// A daemon with [metrics] on serves /metrics: after a pull, a failed pull
// and a pod start, the runtime's series are there with their label sets,
// count what happened, and pass promlint; the pod start is traced in the
// log in one line.
func TestMetricsAfterPullAndPodStart(t *testing.T) {
	testutil.RequiresRoot(t)
	t.Parallel()
	testutil.RequireRegistry(t)
	d := testutil.StartDaemon(t, testutil.Options{
		Registries:  map[string][]string{"registry.k8s.io": {testutil.LoopbackRegistry}},
		ExtraConfig: testutil.MetricsConfig,
	})
	img := testutil.TestImage{Ref: testutil.RegistryBusyboxRef}
	e := &env{t: t, d: d, img: img}
	url := d.MetricsURL(t)

	if _, err := d.Images.PullImage(e.ctx(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: img.Ref}}); err != nil {
		t.Fatalf("pull %s: %v", img.Ref, err)
	}
	_, err := d.Images.PullImage(e.ctx(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "127.0.0.1:5000/e2e-test-images/no-such-image:1"}})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("pull of a missing image: %v, want NotFound", err)
	}
	pod := e.podConfig("metrics")
	podID := e.runPod(pod)
	ctr := e.run(podID, pod, e.ctrConfig("sleeper", "sleep", "3600"))

	fams := testutil.Scrape(t, url)
	lintFamilies(t, fams)
	wantLabels := map[string][]string{
		"crib_cri_request_duration_seconds":     {"code", "method"},
		"crib_pod_start_phase_duration_seconds": {"phase"},
		"crib_image_pull_bytes_total":           nil,
		"crib_image_pull_duration_seconds":      nil,
		"crib_image_pulls_in_flight":            nil,
		"crib_image_pull_failures_total":        {"reason"},
		"crib_cni_operation_duration_seconds":   {"op", "result"},
		"crib_containers":                       {"state"},
		"crib_sandboxes":                        {"state"},
		"crib_monitors_idle":                    nil,
		"crib_monitors_running":                 nil,
	}
	for name, labels := range wantLabels {
		mf := fams[name]
		if mf == nil || len(mf.GetMetric()) == 0 {
			t.Errorf("no series of %s", name)
			continue
		}
		for _, m := range mf.GetMetric() {
			var got []string
			for _, l := range m.GetLabel() {
				got = append(got, l.GetName())
			}
			slices.Sort(got)
			if !slices.Equal(got, labels) {
				t.Errorf("%s has labels %v, want %v", name, got, labels)
				break
			}
		}
	}

	for _, tt := range []struct {
		name   string
		labels map[string]string
		check  func(*dto.Metric) bool
		want   string
	}{
		{"crib_cri_request_duration_seconds", map[string]string{"method": "RunPodSandbox", "code": "OK"}, histCount(1), "one RunPodSandbox"},
		{"crib_cri_request_duration_seconds", map[string]string{"method": "StartContainer", "code": "OK"}, histCount(1), "one StartContainer"},
		{"crib_cri_request_duration_seconds", map[string]string{"method": "PullImage", "code": "OK"}, histCount(1), "one good PullImage"},
		{"crib_cri_request_duration_seconds", map[string]string{"method": "PullImage", "code": "NotFound"}, histCount(1), "one PullImage NotFound"},
		{"crib_image_pull_duration_seconds", nil, histCount(2), "two pulls timed"},
		{"crib_image_pull_bytes_total", nil, func(m *dto.Metric) bool { return m.GetCounter().GetValue() > 1000 }, "the layers' bytes"},
		{"crib_image_pulls_in_flight", nil, gauge(0), "no pull in flight"},
		{"crib_image_pull_failures_total", map[string]string{"reason": "not_found"}, counter(1), "one pull not found"},
		{"crib_image_pull_failures_total", map[string]string{"reason": "network"}, counter(0), "no network failure"},
		{"crib_pod_start_phase_duration_seconds", map[string]string{"phase": "namespaces"}, histCount(1), "one namespaces phase"},
		{"crib_pod_start_phase_duration_seconds", map[string]string{"phase": "cni_add"}, histCount(1), "one CNI ADD phase"},
		{"crib_pod_start_phase_duration_seconds", map[string]string{"phase": "image_resolve"}, histCount(1), "one image resolve"},
		{"crib_pod_start_phase_duration_seconds", map[string]string{"phase": "spec"}, histCount(1), "one spec phase"},
		{"crib_pod_start_phase_duration_seconds", map[string]string{"phase": "runtime_start"}, histCount(1), "one runtime start"},
		{"crib_cni_operation_duration_seconds", map[string]string{"op": "add", "result": "success"}, histCount(1), "one CNI ADD"},
		{"crib_containers", map[string]string{"state": "running"}, gauge(1), "one running container"},
		{"crib_containers", map[string]string{"state": "exited"}, gauge(0), "no exited container"},
		{"crib_sandboxes", map[string]string{"state": "ready"}, gauge(1), "one ready sandbox"},
		{"crib_monitors_running", nil, gauge(1), "one monitor with a container"},
	} {
		m := find(fams, tt.name, tt.labels)
		if m == nil || !tt.check(m) {
			t.Errorf("%s%v: want %s; got %v", tt.name, tt.labels, tt.want, m)
		}
	}
	if n := len(fams["crib_image_pull_failures_total"].GetMetric()); n != 6 {
		t.Errorf("%d pull failure reasons, want the 6 fixed ones", n)
	}

	// One trace line for the pod's start, with every phase.
	re := regexp.MustCompile(`(?m)^.*msg="pod start trace".*pod=` + podID + `.*$`)
	lines := re.FindAllString(d.ReadLog(), -1)
	if len(lines) != 1 {
		t.Fatalf("%d trace lines of pod %s, want 1", len(lines), podID)
	}
	t.Logf("trace: %s", lines[0])
	for _, phase := range []string{"namespaces", "cni_add", "image_resolve", "spec", "runtime_start"} {
		if !strings.Contains(lines[0], "phases."+phase+"=") {
			t.Errorf("trace %q lacks phase %s", lines[0], phase)
		}
	}

	// The stop is counted too: containers and sandboxes are read at each
	// scrape, and CNI DEL is timed.
	if _, err := e.rt().StopContainer(e.ctx(), &runtimeapi.StopContainerRequest{ContainerId: ctr, Timeout: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt().StopPodSandbox(e.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatal(err)
	}
	fams = testutil.Scrape(t, url)
	for _, tt := range []struct {
		name   string
		labels map[string]string
		check  func(*dto.Metric) bool
		want   string
	}{
		{"crib_cni_operation_duration_seconds", map[string]string{"op": "del", "result": "success"}, histCount(1), "one CNI DEL"},
		{"crib_containers", map[string]string{"state": "running"}, gauge(0), "no running container"},
		{"crib_containers", map[string]string{"state": "exited"}, gauge(1), "one exited container"},
		{"crib_sandboxes", map[string]string{"state": "notready"}, gauge(1), "one stopped sandbox"},
		{"crib_monitors_running", nil, gauge(0), "no monitor with a container"},
	} {
		m := find(fams, tt.name, tt.labels)
		if m == nil || !tt.check(m) {
			t.Errorf("after stop: %s%v: want %s; got %v", tt.name, tt.labels, tt.want, m)
		}
	}
}

// lintFamilies fails the test on what promlint finds in the scraped
// families.
func lintFamilies(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	problems, err := promtest.GatherAndLint(prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		out := make([]*dto.MetricFamily, 0, len(fams))
		for _, mf := range fams {
			out = append(out, mf)
		}
		return out, nil
	}))
	if err != nil {
		t.Fatalf("lint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// find returns the series of family name with exactly labels, or nil.
func find(fams map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	for _, m := range fams[name].GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			match = match && labels[l.GetName()] == l.GetValue()
		}
		if match {
			return m
		}
	}
	return nil
}

func histCount(n uint64) func(*dto.Metric) bool {
	return func(m *dto.Metric) bool { return m.GetHistogram().GetSampleCount() == n }
}

func counter(v float64) func(*dto.Metric) bool {
	return func(m *dto.Metric) bool { return m.GetCounter().GetValue() == v }
}

func gauge(v float64) func(*dto.Metric) bool {
	return func(m *dto.Metric) bool { return m.GetGauge().GetValue() == v }
}
