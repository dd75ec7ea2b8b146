package kuberuntime

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func countCalls(calls []string, name string) int {
	n := 0
	for _, c := range calls {
		if c == name {
			n++
		}
	}
	return n
}

func (e *env) pulls() int {
	e.img.Lock()
	defer e.img.Unlock()
	return countCalls(e.img.Called, "PullImage")
}

func (e *env) creates() int { return len(withPrefix(e.log.since(0), "CreateContainer")) }

func TestImagePullPolicies(t *testing.T) {
	tests := []struct {
		name        string
		policy      corev1.PullPolicy
		present     bool
		wantPulls   int
		wantCreate  bool
		wantWaiting string
	}{
		{name: "Never absent", policy: corev1.PullNever, present: false, wantPulls: 0, wantWaiting: reasonErrImageNeverPull},
		{name: "Never present", policy: corev1.PullNever, present: true, wantPulls: 0, wantCreate: true},
		{name: "IfNotPresent present", policy: corev1.PullIfNotPresent, present: true, wantPulls: 0, wantCreate: true},
		{name: "IfNotPresent absent", policy: corev1.PullIfNotPresent, present: false, wantPulls: 1, wantCreate: true},
		{name: "Always present", policy: corev1.PullAlways, present: true, wantPulls: 1, wantCreate: true},
		{name: "Always absent", policy: corev1.PullAlways, present: false, wantPulls: 1, wantCreate: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if !tc.present {
				e.img.SetFakeImages(nil)
			}
			pod := testPod(func(p *corev1.Pod) { p.Spec.Containers[0].ImagePullPolicy = tc.policy })
			res := e.sync(pod)
			if got := e.pulls(); got != tc.wantPulls {
				t.Errorf("PullImage calls = %d, want %d", got, tc.wantPulls)
			}
			if got := e.creates() > 0; got != tc.wantCreate {
				t.Errorf("created = %v, want %v (calls %v)", got, tc.wantCreate, e.log.since(0))
			}
			w := e.waitingOf(string(pod.UID))["app"]
			if w.Reason != tc.wantWaiting {
				t.Errorf("Waiting[app] = %+v, want reason %q", w, tc.wantWaiting)
			}
			if tc.wantWaiting != "" {
				if res.Err == nil || !IsWaiting(res.Err) {
					t.Errorf("SyncPod err = %v, want a waiting error", res.Err)
				}
			} else if res.Err != nil {
				t.Errorf("SyncPod: %v", res.Err)
			}
		})
	}
}

func TestImagePullBackoff(t *testing.T) {
	e := newEnv(t)
	e.img.SetFakeImages(nil)
	e.img.InjectError("PullImage", errors.New("registry unreachable"))
	pod := testPod()

	res := e.sync(pod)
	if res.Err == nil {
		t.Fatal("SyncPod: no error after a failed pull")
	}
	if got := e.pulls(); got != 1 {
		t.Fatalf("PullImage calls = %d, want 1", got)
	}
	if w := e.waitingOf(string(pod.UID))["app"]; w.Reason != reasonErrImagePull {
		t.Fatalf("after a failed pull Waiting[app] = %+v, want %s", w, reasonErrImagePull)
	}
	if e.creates() != 0 {
		t.Fatalf("created a container without its image: %v", e.log.since(0))
	}

	// Within the backoff: no pull, ImagePullBackOff.
	e.clk.Step(5 * time.Second)
	res = e.sync(pod)
	if !IsWaiting(res.Err) {
		t.Errorf("SyncPod err in pull backoff = %v, want a waiting error", res.Err)
	}
	if got := e.pulls(); got != 1 {
		t.Fatalf("PullImage calls in backoff = %d, want still 1", got)
	}
	if w := e.waitingOf(string(pod.UID))["app"]; w.Reason != reasonImagePullBackOff {
		t.Fatalf("in backoff Waiting[app] = %+v, want %s", w, reasonImagePullBackOff)
	}

	// Past the backoff (10s from the failure): pulls again and starts.
	e.clk.Step(6 * time.Second)
	e.mustSync(pod)
	if got := e.pulls(); got != 2 {
		t.Fatalf("PullImage calls after the backoff = %d, want 2", got)
	}
	e.running(pod, "app")
	if w, ok := e.waitingOf(string(pod.UID))["app"]; ok {
		t.Errorf("Waiting[app] after start = %+v, want none", w)
	}
}

func TestImagePullBackoffDoubles(t *testing.T) {
	e := newEnv(t)
	e.img.SetFakeImages(nil)
	e.img.InjectError("PullImage", errors.New("one"))
	e.img.InjectError("PullImage", errors.New("two"))
	pod := testPod()

	e.sync(pod) // fails, 10s
	e.clk.Step(11 * time.Second)
	e.sync(pod) // fails again, 20s
	if got := e.pulls(); got != 2 {
		t.Fatalf("PullImage calls = %d, want 2", got)
	}
	e.clk.Step(15 * time.Second)
	e.sync(pod)
	if got := e.pulls(); got != 2 {
		t.Fatalf("PullImage calls 15s into a 20s backoff = %d, want 2", got)
	}
	e.clk.Step(6 * time.Second)
	e.mustSync(pod)
	if got := e.pulls(); got != 3 {
		t.Fatalf("PullImage calls after the second backoff = %d, want 3", got)
	}
}

// imageVolumePod mounts image volume "tools" (policy) in app, whole and at
// a subPath.
func imageVolumePod(policy corev1.PullPolicy) *corev1.Pod {
	return testPod(func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "tools", VolumeSource: corev1.VolumeSource{
			Image: &corev1.ImageVolumeSource{Reference: "example.com/tools:1", PullPolicy: policy}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
			{Name: "tools", MountPath: "/tools"},
			{Name: "tools", MountPath: "/bin2", SubPath: "bin"},
		}
	})
}

func TestImageVolumePulledAndMounted(t *testing.T) {
	e := newEnv(t)
	e.img.SetFakeImages([]string{"busybox:1.36"})
	e.img.InjectError("PullImage", errors.New("registry unreachable"))
	pod := imageVolumePod(corev1.PullIfNotPresent)

	// A failed pull of the volume's image holds the container back, as
	// a failed pull of its own image does, with the same backoff.
	if res := e.sync(pod); res.Err == nil {
		t.Fatal("SyncPod: no error after a failed pull of an image volume")
	}
	if w := e.waitingOf(string(pod.UID))["app"]; w.Reason != reasonErrImagePull || !strings.Contains(w.Message, "example.com/tools:1") {
		t.Fatalf("Waiting[app] = %+v, want %s naming the volume's image", w, reasonErrImagePull)
	}
	e.clk.Step(5 * time.Second)
	if res := e.sync(pod); !IsWaiting(res.Err) {
		t.Errorf("SyncPod in pull backoff = %v, want a waiting error", res.Err)
	}
	if e.creates() != 0 || e.pulls() != 1 {
		t.Fatalf("in backoff: %d creates, %d pulls; want 0 and 1", e.creates(), e.pulls())
	}

	e.clk.Step(6 * time.Second)
	e.mustSync(pod)
	if e.pulls() != 2 {
		t.Fatalf("PullImage calls = %d, want 2", e.pulls())
	}
	var got []*runtimeapi.Mount
	for _, m := range e.rt.lastCreated().GetMounts() {
		if m.GetImage() != nil {
			got = append(got, m)
		}
	}
	want := []*runtimeapi.Mount{
		{ContainerPath: "/tools", Image: &runtimeapi.ImageSpec{Image: "example.com/tools:1"}, Readonly: true},
		{ContainerPath: "/bin2", Image: &runtimeapi.ImageSpec{Image: "example.com/tools:1"}, ImageSubPath: "bin", Readonly: true},
	}
	if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
		t.Errorf("image mounts (-want +got):\n%s", d)
	}
}

func TestImageVolumeNeverPulled(t *testing.T) {
	e := newEnv(t)
	e.img.SetFakeImages([]string{"busybox:1.36"})
	pod := imageVolumePod(corev1.PullNever)
	if res := e.sync(pod); !IsWaiting(res.Err) {
		t.Errorf("SyncPod = %v, want a waiting error", res.Err)
	}
	if w := e.waitingOf(string(pod.UID))["app"]; w.Reason != reasonErrImageNeverPull {
		t.Errorf("Waiting[app] = %+v, want %s", w, reasonErrImageNeverPull)
	}
	if e.pulls() != 0 || e.creates() != 0 {
		t.Errorf("%d pulls, %d creates; want none", e.pulls(), e.creates())
	}
}

// A container whose image is a checkpoint archive (an absolute .tar path)
// is created with that path as its image, whatever its pull policy:
// nothing is pulled or looked up, the runtime restores from the archive.
func TestImageCheckpointArchiveNotPulled(t *testing.T) {
	for _, policy := range []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever} {
		t.Run(string(policy), func(t *testing.T) {
			e := newEnv(t)
			e.img.SetFakeImages(nil)
			const archive = "/var/lib/crib/checkpoints/checkpoint-web_default-app-2026-01-01T00:00:00Z.tar"
			pod := testPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Image = archive
				p.Spec.Containers[0].ImagePullPolicy = policy
			})
			if res := e.sync(pod); res.Err != nil {
				t.Fatalf("SyncPod: %v", res.Err)
			}
			e.img.Lock()
			calls := append([]string(nil), e.img.Called...)
			e.img.Unlock()
			if n := countCalls(calls, "PullImage") + countCalls(calls, "ImageStatus"); n != 0 {
				t.Errorf("image calls for an archive: %v, want none", calls)
			}
			cfg := e.rt.lastCreated()
			if cfg == nil {
				t.Fatal("no container created")
			}
			if got := cfg.GetImage().GetImage(); got != archive {
				t.Errorf("created with image %q, want the archive %q", got, archive)
			}
		})
	}
}

func TestIsCheckpointArchive(t *testing.T) {
	for in, want := range map[string]bool{
		"/var/lib/kubelet/checkpoints/checkpoint-a_b-c-2026-01-01T00:00:00Z.tar": true,
		"/x.tar":               true,
		"x.tar":                false, // relative: no path the runtime could open
		"registry/x.tar":       false,
		"/var/lib/x.tar.gz":    false,
		"busybox:1.36":         false,
		"localhost:5000/a/tar": false,
	} {
		if got := IsCheckpointArchive(in); got != want {
			t.Errorf("IsCheckpointArchive(%q) = %v, want %v", in, got, want)
		}
	}
}
