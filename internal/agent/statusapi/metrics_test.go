package statusapi

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// sample is one parsed line of the text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// parseText parses the Prometheus text format strictly enough to catch
// mistakes: every sample belongs to a family announced by HELP then TYPE,
// label values are quoted and escaped, values are floats.
func parseText(t *testing.T, text string) (types map[string]string, samples []sample) {
	t.Helper()
	types = map[string]string{}
	helps := map[string]bool{}
	if !strings.HasSuffix(text, "\n") {
		t.Fatalf("output does not end with a newline")
	}
	for n, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "# HELP "):
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "# HELP "), " ")
			helps[name] = true
		case strings.HasPrefix(line, "# TYPE "):
			name, typ, _ := strings.Cut(strings.TrimPrefix(line, "# TYPE "), " ")
			if !helps[name] {
				t.Errorf("line %d: TYPE before HELP for %s", n+1, name)
			}
			if _, dup := types[name]; dup {
				t.Errorf("line %d: second TYPE for %s", n+1, name)
			}
			types[name] = typ
		default:
			s, err := parseSample(line)
			if err != nil {
				t.Fatalf("line %d %q: %v", n+1, line, err)
			}
			base := s.name
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if trimmed := strings.TrimSuffix(base, suffix); types[trimmed] == "histogram" {
					base = trimmed
				}
			}
			if _, ok := types[base]; !ok {
				t.Errorf("line %d: sample %s without TYPE", n+1, s.name)
			}
			samples = append(samples, s)
		}
	}
	return types, samples
}

func parseSample(line string) (sample, error) {
	s := sample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return s, fmt.Errorf("no metric name")
	}
	s.name, line = line[:i], line[i:]
	if line[0] == '{' {
		line = line[1:]
		for line[0] != '}' {
			eq := strings.Index(line, `="`)
			if eq <= 0 {
				return s, fmt.Errorf("bad label in %q", line)
			}
			key := line[:eq]
			line = line[eq+2:]
			var val strings.Builder
			for {
				if line == "" {
					return s, fmt.Errorf("unterminated label value")
				}
				c := line[0]
				line = line[1:]
				if c == '"' {
					break
				}
				if c == '\n' {
					return s, fmt.Errorf("raw newline in label value")
				}
				if c == '\\' {
					switch line[0] {
					case '\\', '"':
						val.WriteByte(line[0])
					case 'n':
						val.WriteByte('\n')
					default:
						return s, fmt.Errorf("bad escape \\%c", line[0])
					}
					line = line[1:]
					continue
				}
				val.WriteByte(c)
			}
			s.labels[key] = val.String()
			if line[0] == ',' {
				line = line[1:]
			}
		}
		line = line[1:]
	}
	if !strings.HasPrefix(line, " ") {
		return s, fmt.Errorf("no space before value")
	}
	v, err := strconv.ParseFloat(strings.TrimPrefix(line, " "), 64)
	if err != nil {
		return s, fmt.Errorf("value: %w", err)
	}
	s.value = v
	return s, nil
}

func key(s sample) string {
	var parts []string
	for k, v := range s.labels {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return s.name + "{" + strings.Join(parts, ",") + "}"
}

func TestMetricsText(t *testing.T) {
	m := NewMetrics()
	m.ObservePodStart(30 * time.Millisecond)
	m.ObservePodStart(700 * time.Millisecond)
	m.ObservePodStart(time.Second) // on a bound: counts in le="1"
	m.ObservePodStart(2 * time.Minute)
	m.ObserveSync(2 * time.Millisecond)
	m.ContainerRestarted("default", "web", "app")
	m.ContainerRestarted("default", "web", "app")
	m.ContainerRestarted("default", `we"b`, "a\\b\nc")
	m.ProbeResult("liveness", "failure")
	m.ProbeResults.Add(-1, "liveness", "failure") // ignored
	m.ProbeResults.Inc("wrong number of labels")  // ignored
	m.Pods.Set(2, "Running")
	m.ManifestErrors.Set(1)

	var buf bytes.Buffer
	n, err := m.WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("WriteTo = %d, %v; wrote %d", n, err, buf.Len())
	}
	types, samples := parseText(t, buf.String())
	wantTypes := map[string]string{
		"crib_agent_pod_start_duration_seconds": "histogram",
		"crib_agent_sync_duration_seconds":      "histogram",
		"crib_agent_container_restarts_total":   "counter",
		"crib_agent_probe_results_total":        "counter",
		"crib_agent_pods":                       "gauge",
		"crib_agent_manifest_errors":            "gauge",
	}
	if diff := cmp.Diff(wantTypes, types); diff != "" {
		t.Errorf("types (-want +got):\n%s", diff)
	}
	got := map[string]float64{}
	for _, s := range samples {
		k := key(s)
		if _, dup := got[k]; dup {
			t.Errorf("duplicate series %s", k)
		}
		got[k] = s.value
	}
	const ps = "crib_agent_pod_start_duration_seconds"
	want := map[string]float64{
		ps + "_bucket{le=0.05}": 1, ps + "_bucket{le=0.1}": 1, ps + "_bucket{le=0.25}": 1,
		ps + "_bucket{le=0.5}": 1, ps + "_bucket{le=1}": 3, ps + "_bucket{le=2.5}": 3,
		ps + "_bucket{le=5}": 3, ps + "_bucket{le=10}": 3, ps + "_bucket{le=20}": 3,
		ps + "_bucket{le=30}": 3, ps + "_bucket{le=60}": 3, ps + "_bucket{le=+Inf}": 4,
		ps + "_sum{}": 0.03 + 0.7 + 1 + 120, ps + "_count{}": 4,
		"crib_agent_container_restarts_total{container=app,namespace=default,pod=web}":       2,
		"crib_agent_container_restarts_total{container=a\\b\nc,namespace=default,pod=we\"b}": 1,
		"crib_agent_probe_results_total{probe_type=liveness,result=failure}":                 1,
		"crib_agent_pods{phase=Running}":                                                     2,
		"crib_agent_manifest_errors{}":                                                       1,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || fmt.Sprint(g) != fmt.Sprint(v) {
			t.Errorf("%s = %v (present %t), want %v", k, g, ok, v)
		}
	}
	// The sync histogram: cumulative buckets ending in +Inf == count.
	const sd = "crib_agent_sync_duration_seconds"
	if got[sd+"_bucket{le=0.001}"] != 0 || got[sd+"_bucket{le=0.005}"] != 1 || got[sd+"_bucket{le=+Inf}"] != got[sd+"_count{}"] {
		t.Errorf("sync histogram buckets: %v %v %v", got[sd+"_bucket{le=0.001}"], got[sd+"_bucket{le=0.005}"], got[sd+"_bucket{le=+Inf}"])
	}
	if len(got) != len(want)+len(syncBuckets)+3 {
		t.Errorf("%d series, want %d:\n%s", len(got), len(want)+len(syncBuckets)+3, buf.String())
	}
}

func TestMetricsBucketsAreCumulative(t *testing.T) {
	h := NewHistogram("h", "help", []float64{3, 1, 2}, "l")
	for _, v := range []float64{0.5, 1.5, 1.5, 2.5, 10} {
		h.Observe(v, "x")
	}
	m := &Metrics{PodStartDuration: h, SyncDuration: NewHistogram("s", "s", nil), ContainerRestarts: NewCounter("c", "c"),
		ProbeResults: NewCounter("p", "p"), Pods: NewGauge("g", "g"), ManifestErrors: NewGauge("e", "e")}
	var buf bytes.Buffer
	if _, err := m.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	want := `# HELP h help
# TYPE h histogram
h_bucket{l="x",le="1"} 1
h_bucket{l="x",le="2"} 3
h_bucket{l="x",le="3"} 4
h_bucket{l="x",le="+Inf"} 5
h_sum{l="x"} 16
h_count{l="x"} 5
# HELP s s
# TYPE s histogram
s_bucket{le="+Inf"} 0
s_sum 0
s_count 0
# HELP c c
# TYPE c counter
c 0
# HELP p p
# TYPE p counter
p 0
# HELP g g
# TYPE g gauge
g 0
# HELP e e
# TYPE e gauge
e 0
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
}

func TestMetricsEscapingAndDelete(t *testing.T) {
	c := NewCounter("c_total", "line one\nback\\slash", "l")
	c.Inc("a")
	c.Inc("b")
	c.Delete("a")
	m := &Metrics{PodStartDuration: NewHistogram("h", "h", nil, "x"), SyncDuration: NewHistogram("s", "s", nil, "x"),
		ContainerRestarts: c, ProbeResults: NewCounter("p", "p", "x"), Pods: NewGauge("g", "g", "x"), ManifestErrors: NewGauge("e", "e", "x")}
	var buf bytes.Buffer
	if _, err := m.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "# HELP c_total line one\\nback\\\\slash\n") {
		t.Errorf("help not escaped:\n%s", buf.String())
	}
	if strings.Contains(buf.String(), `l="a"`) || !strings.Contains(buf.String(), `c_total{l="b"} 1`) {
		t.Errorf("delete:\n%s", buf.String())
	}
	parseText(t, buf.String())
}
