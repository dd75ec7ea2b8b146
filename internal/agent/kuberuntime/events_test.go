package kuberuntime

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
)

// fakeRecorder keeps the reasons of the events recorded.
type fakeRecorder struct {
	mu      sync.Mutex
	reasons []string
}

func (r *fakeRecorder) Event(_ *corev1.Pod, eventType, reason, _ string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reasons = append(r.reasons, eventType+":"+reason)
}

func (r *fakeRecorder) since(mark int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reasons[mark:]...)
}

func (r *fakeRecorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reasons)
}

func TestEvents(t *testing.T) {
	rec := &fakeRecorder{}
	e := newEnv(t, func(c *Config) { c.Recorder = rec })
	e.img.SetFakeImages(nil)
	pod := testPod()
	e.mustSync(pod)
	if got, want := rec.since(0), []string{"Normal:Pulling", "Normal:Pulled", "Normal:Created", "Normal:Started"}; !cmp.Equal(got, want) {
		t.Errorf("start events = %v, want %v", got, want)
	}
	mark := rec.len()
	if err := e.m.TerminatePod(e.ctx, pod, e.observe(pod)); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.since(mark), []string{"Normal:Killing"}; !cmp.Equal(got, want) {
		t.Errorf("termination events = %v, want %v", got, want)
	}
}

func TestContainerThatWillNotStopGetsNoTwin(t *testing.T) {
	e := newEnv(t)
	pod := testPod()
	e.mustSync(pod)
	old := e.running(pod, "app")
	edited := testPod(func(p *corev1.Pod) { p.Spec.Containers[0].Args = []string{"-v"} })

	e.rt.InjectError("StopContainer", status.Error(codes.DeadlineExceeded, "stop timed out"))
	mark := e.log.len()
	if res := e.sync(edited); res.Err == nil {
		t.Fatal("SyncPod: no error when the old container would not stop")
	}
	if got := withPrefix(e.log.since(mark), "CreateContainer"); len(got) != 0 {
		t.Fatalf("created %v while the old instance still runs", got)
	}
	if c := e.running(edited, "app"); c.ID != old.ID {
		t.Fatalf("running %s, want the old %s", c.ID, old.ID)
	}

	// The next sync stops it and starts the new one.
	mark = e.log.len()
	e.mustSync(edited)
	before(t, e.log.since(mark), "StopContainer:"+old.ID, "CreateContainer:app:1")
	e.running(edited, "app")
}

func TestStopContainerNotFoundIsDone(t *testing.T) {
	e := newEnv(t)
	pod := testPod()
	e.mustSync(pod)
	e.rt.InjectError("StopContainer", status.Error(codes.NotFound, "gone"))
	e.rt.InjectError("RemoveContainer", status.Error(codes.NotFound, "gone"))
	e.rt.InjectError("StopPodSandbox", status.Error(codes.NotFound, "gone"))
	e.rt.InjectError("RemovePodSandbox", status.Error(codes.NotFound, "gone"))
	if err := e.m.TerminatePod(e.ctx, pod, e.observe(pod)); err != nil {
		t.Fatalf("TerminatePod with everything already gone: %v", err)
	}
}

// TestWaitingIsACopy: the reasons a sync learned are applied to a copy of
// the ones kept, so that changing the result changes nothing kept.
func TestWaitingIsACopy(t *testing.T) {
	e := newEnv(t)
	pod := testPod(func(p *corev1.Pod) { p.Spec.Containers[0].ImagePullPolicy = corev1.PullNever })
	e.img.SetFakeImages(nil)
	res := e.sync(pod)
	kept := e.waitingOf(string(pod.UID))
	w := res.Waiting.Apply(kept)
	delete(w, "app")
	if _, ok := kept["app"]; !ok {
		t.Errorf("changing the returned map changed the kept one")
	}
}
