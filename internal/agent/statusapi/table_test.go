package statusapi

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/plan"
	"github.com/crib-dev/crib/internal/agent/podstatus"
)

// tablePods builds pods through podstatus.Compute, so the tables are tested on the
// statuses the agent really produces.
func tablePods(now time.Time) *corev1.PodList {
	sb := readySandbox()
	mk := func(p *corev1.Pod, start time.Time, obs plan.Observed, waiting map[string]podstatus.Waiting) corev1.Pod {
		out := p.DeepCopy()
		out.Status = podstatus.Compute(podstatus.Facts{Pod: p, Observed: obs, Waiting: waiting, Now: now, StartTime: start,
			Terminating: p.DeletionTimestamp != nil})
		return *out
	}
	var items []corev1.Pod

	web := testPod(always, nil, "app", "side")
	web.Name = "web"
	items = append(items, mk(web, now.Add(-45*time.Second), plan.Observed{Sandboxes: []plan.Sandbox{sb},
		Containers: []plan.Container{app("app", running, 0, 0), app("side", running, 0, 0)}}, nil))

	crash := testPod(always, nil, "app")
	crash.Name = "crash"
	last := app("app", exited, 4, 1)
	last.FinishedAt = now.Add(-20 * time.Second)
	items = append(items, mk(crash, now.Add(-(3*time.Minute+12*time.Second)), plan.Observed{Sandboxes: []plan.Sandbox{sb},
		Containers: []plan.Container{last}}, map[string]podstatus.Waiting{"app": {Reason: podstatus.ReasonCrashLoopBackOff}}))

	pull := testPod(always, nil, "app")
	pull.Name = "pull"
	items = append(items, mk(pull, now.Add(-5*time.Hour), plan.Observed{Sandboxes: []plan.Sandbox{sb}},
		map[string]podstatus.Waiting{"app": {Reason: "ErrImagePull"}}))

	initing := testPod(always, []string{"i1", "i2"}, "app")
	initing.Name = "initing"
	items = append(items, mk(initing, now.Add(-50*time.Hour), plan.Observed{Sandboxes: []plan.Sandbox{sb},
		Containers: []plan.Container{initC("i1", exited, 0, 0), initC("i2", running, 0, 0)}}, nil))

	initErr := testPod(never, []string{"i1"}, "app")
	initErr.Name = "init-error"
	items = append(items, mk(initErr, now.Add(-2*time.Minute), plan.Observed{Sandboxes: []plan.Sandbox{sb},
		Containers: []plan.Container{initC("i1", exited, 0, 2)}}, nil))

	podInit := testPod(always, []string{"i1"}, "app")
	podInit.Name = "pod-init"
	items = append(items, mk(podInit, now.Add(-10*time.Second), plan.Observed{Sandboxes: []plan.Sandbox{sb},
		Containers: []plan.Container{initC("i1", exited, 0, 0)}}, nil))

	done := testPod(never, nil, "app")
	done.Name = "done"
	done.Namespace = "batch"
	items = append(items, mk(done, now.Add(-9*24*time.Hour), plan.Observed{
		Containers: []plan.Container{app("app", exited, 0, 0)}}, nil))

	gone := testPod(always, nil, "app")
	gone.Name = "gone"
	gone = podstatus.MarkTerminating(gone, now)
	items = append(items, mk(gone, now.Add(-time.Minute), plan.Observed{Sandboxes: []plan.Sandbox{sb},
		Containers: []plan.Container{app("app", running, 0, 0)}}, nil))

	return &corev1.PodList{Items: items}
}

func TestWritePods(t *testing.T) {
	now := t0.Add(time.Hour)
	var buf bytes.Buffer
	if err := WritePods(&buf, tablePods(now), now); err != nil {
		t.Fatal(err)
	}
	want := `NAMESPACE   NAME         READY   STATUS              RESTARTS      AGE     IP
default     web          2/2     Running             0             45s     10.88.0.5
default     crash        0/1     CrashLoopBackOff    4 (20s ago)   3m12s   10.88.0.5
default     pull         0/1     ErrImagePull        0             5h      10.88.0.5
default     initing      0/1     Init:1/2            0             2d2h    10.88.0.5
default     init-error   0/1     Init:Error          0             2m      10.88.0.5
default     pod-init     0/1     ContainerCreating   0             10s     10.88.0.5
batch       done         0/1     Completed           0             9d      <none>
default     gone         0/1     Terminating         0             60s     10.88.0.5
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

func TestWritePodsWideShowsUserNamespaces(t *testing.T) {
	now := t0.Add(time.Hour)
	mk := func(name string, hostUsers *bool, block string) corev1.Pod {
		p := testPod(always, nil, "app")
		p.Name = name
		p.Spec.HostUsers = hostUsers
		if block != "" {
			p.Annotations = map[string]string{labels.UserNamespace: block}
		}
		p.Status = podstatus.Compute(podstatus.Facts{Pod: p, Observed: plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()},
			Containers: []plan.Container{app("app", running, 0, 0)}}, Now: now, StartTime: now.Add(-time.Minute)})
		return *p
	}
	no, yes := false, true
	pods := &corev1.PodList{Items: []corev1.Pod{
		mk("own", &no, "131072+65536"), mk("waiting", &no, ""), mk("default", nil, ""), mk("host", &yes, ""),
	}}
	var buf bytes.Buffer
	if err := WritePodsWide(&buf, pods, now); err != nil {
		t.Fatal(err)
	}
	want := `NAMESPACE   NAME      READY   STATUS    RESTARTS   AGE   IP          USERNS
default     own       1/1     Running   0          60s   10.88.0.5   131072+65536
default     waiting   1/1     Running   0          60s   10.88.0.5   <pending>
default     default   1/1     Running   0          60s   10.88.0.5   host
default     host      1/1     Running   0          60s   10.88.0.5   host
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

func TestWritePodsInitializing(t *testing.T) {
	// Before any init container exists the app containers wait with
	// PodInitializing, which kubectl shows as Init:0/N.
	now := t0
	p := testPod(always, []string{"i1"}, "app")
	p.Status = podstatus.Compute(podstatus.Facts{Pod: p, Now: now, StartTime: now})
	p.CreationTimestamp = metav1.NewTime(now.Add(-3 * time.Second))
	var buf bytes.Buffer
	if err := WritePods(&buf, &corev1.PodList{Items: []corev1.Pod{*p}}, now); err != nil {
		t.Fatal(err)
	}
	want := `NAMESPACE   NAME   READY   STATUS     RESTARTS   AGE   IP
default     web    0/1     Init:0/1   0          3s    <none>
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

func TestWriteContainers(t *testing.T) {
	now := t0.Add(time.Hour)
	pods := tablePods(now)
	pods.Items = pods.Items[:4]
	// The agent names restored containers in an annotation of the pod.
	pods.Items[0].Annotations = map[string]string{labels.Restored: "side"}
	var buf bytes.Buffer
	if err := WriteContainers(&buf, pods, now); err != nil {
		t.Fatal(err)
	}
	want := `CONTAINER   NAME   POD       STATE                      RESTARTS   AGE   IMAGE
app-0       app    web       Running                    0          58m   img-app
side-0      side   web       Running (restored)         0          58m   img-side
app-4       app    crash     Waiting:CrashLoopBackOff   4          -     img-app
-           app    pull      Waiting:ErrImagePull       0          -     nginx:app
i1-0        i1     initing   Exited(0):Completed        0          58m   img-i1
i2-0        i2     initing   Running                    0          58m   img-i2
-           app    initing   Waiting:PodInitializing    0          -     nginx:app
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

func TestShortID(t *testing.T) {
	for in, want := range map[string]string{
		"":                            "-",
		"crib://0123456789abcdef0123": "0123456789abc",
		"containerd://abc":            "abc",
		"0123456789abcdef":            "0123456789abc",
	} {
		if got := ShortID(in); got != want {
			t.Errorf("ShortID(%q) = %q, want %q", in, got, want)
		}
	}
}

// A pod whose container waits for its image shows the pull's percent in
// STATUS, an init container's as Init:.
func TestWritePodsShowsPullPercent(t *testing.T) {
	now := time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)
	app := testPod(always, nil, "app")
	app.Name = "app"
	app.Status = podstatus.Compute(podstatus.Facts{Pod: app, Observed: plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}}, Now: now, StartTime: now,
		Waiting: map[string]podstatus.Waiting{"app": {Reason: podstatus.ReasonContainerCreating, Message: podstatus.PullingMessage("nginx", 1, 4, true)}}})
	initing := testPod(always, []string{"i1"}, "app")
	initing.Name = "initing"
	initing.Status = podstatus.Compute(podstatus.Facts{Pod: initing, Observed: plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}}, Now: now, StartTime: now,
		Waiting: map[string]podstatus.Waiting{"i1": {Reason: podstatus.ReasonContainerCreating, Message: podstatus.PullingMessage("nginx", 3, 4, true)}}})
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
