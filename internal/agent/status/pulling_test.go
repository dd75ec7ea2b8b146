package status

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/plan"
)

func TestPullingMessage(t *testing.T) {
	for _, tc := range []struct {
		name        string
		done, total int64
		known       bool
		want, pct   string
	}{
		{name: "runtime tells", done: 12_345_678, total: 29_100_000, known: true,
			want: `Pulling image "busybox:1.36" (42%: 12.3 of 29.1 MB)`, pct: "42%"},
		{name: "done", done: 5, total: 5, known: true, want: `Pulling image "busybox:1.36" (100%: 0.0 of 0.0 MB)`, pct: "100%"},
		{name: "runtime does not tell", want: `Pulling image "busybox:1.36"`},
		{name: "size not known yet", known: true, want: `Pulling image "busybox:1.36"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PullingMessage("busybox:1.36", tc.done, tc.total, tc.known)
			if got != tc.want {
				t.Errorf("message %q, want %q", got, tc.want)
			}
			pct, ok := pullPercent(got)
			if pct != tc.pct || ok != (tc.pct != "") {
				t.Errorf("percent of %q = %q, %v; want %q", got, pct, ok, tc.pct)
			}
		})
	}
	for _, msg := range []string{`Back-off pulling image "x" (10s left)`, `Failed to pull image "a (b)"`, ""} {
		if pct, ok := pullPercent(msg); ok {
			t.Errorf("percent of %q = %q, want none", msg, pct)
		}
	}
}

// A pod whose container waits for its image shows the pull's percent in
// STATUS, an init container's as Init:.
func TestWritePodsShowsPullPercent(t *testing.T) {
	now := time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)
	app := testPod(always, nil, "app")
	app.Name = "app"
	app.Status = Compute(Facts{Pod: app, Observed: plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}}, Now: now, StartTime: now,
		Waiting: map[string]Waiting{"app": {Reason: ReasonContainerCreating, Message: PullingMessage("nginx", 1, 4, true)}}})
	initing := testPod(always, []string{"i1"}, "app")
	initing.Name = "initing"
	initing.Status = Compute(Facts{Pod: initing, Observed: plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}}, Now: now, StartTime: now,
		Waiting: map[string]Waiting{"i1": {Reason: ReasonContainerCreating, Message: PullingMessage("nginx", 3, 4, true)}}})
	var out strings.Builder
	if err := WritePods(&out, &corev1.PodList{Items: []corev1.Pod{*app, *initing}}, now); err != nil {
		t.Fatal(err)
	}
	var statuses []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
		fields := strings.Fields(line)
		statuses = append(statuses, strings.Join(fields[3:len(fields)-3], " "))
	}
	if diff := cmp.Diff([]string{"ContainerCreating (25%)", "Init:ContainerCreating (75%)"}, statuses); diff != "" {
		t.Errorf("STATUS (-want +got):\n%s\n%s", diff, out.String())
	}
}
