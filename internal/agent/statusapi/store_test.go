package statusapi

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func namedPod(ns, name, uid string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
}

func TestStore(t *testing.T) {
	s := NewStore()
	s.Set(namedPod("kube-system", "dns", "u1"), corev1.PodStatus{Phase: corev1.PodRunning})
	s.Set(namedPod("default", "web", "u2"), corev1.PodStatus{Phase: corev1.PodPending})
	s.Set(namedPod("default", "api", "u3"), corev1.PodStatus{Phase: corev1.PodFailed})
	// A newer status for the same UID replaces the old one.
	s.Set(namedPod("default", "web", "u2"), corev1.PodStatus{Phase: corev1.PodRunning})

	list := s.List()
	if list.Kind != "PodList" || list.APIVersion != "v1" {
		t.Errorf("type meta = %+v", list.TypeMeta)
	}
	var got []string
	for _, p := range list.Items {
		got = append(got, fmt.Sprintf("%s/%s %s", p.Namespace, p.Name, p.Status.Phase))
	}
	want := []string{"default/api Failed", "default/web Running", "kube-system/dns Running"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}

	p, ok := s.Get("u2")
	if !ok || p.Name != "web" || p.Status.Phase != corev1.PodRunning {
		t.Fatalf("Get(u2) = %v %v", p, ok)
	}
	p.Status.Phase = corev1.PodUnknown // a copy: the store must not change
	if again, _ := s.Get("u2"); again.Status.Phase != corev1.PodRunning {
		t.Errorf("Get returned the stored pod, not a copy")
	}
	if p, ok := s.Lookup("default", "api"); !ok || p.UID != "u3" {
		t.Errorf("Lookup(default/api) = %v %v", p, ok)
	}
	if _, ok := s.Lookup("default", "nope"); ok {
		t.Errorf("Lookup found a pod that does not exist")
	}

	s.Delete("u2")
	s.Delete("unknown")
	if _, ok := s.Get("u2"); ok {
		t.Errorf("Get after Delete found the pod")
	}
	if n := len(s.List().Items); n != 2 {
		t.Errorf("List after Delete has %d pods, want 2", n)
	}
}

func TestStoreSetCopies(t *testing.T) {
	s := NewStore()
	pod := namedPod("default", "web", "u1")
	st := corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady}}}
	s.Set(pod, st)
	pod.Name = "changed"
	st.Conditions[0].Type = "changed"
	got, _ := s.Get("u1")
	if got.Name != "web" || got.Status.Conditions[0].Type != corev1.PodReady {
		t.Errorf("Set kept references to its arguments: %s %s", got.Name, got.Status.Conditions[0].Type)
	}
}

func TestStoreSourceErrors(t *testing.T) {
	s := NewStore()
	if got := s.SourceErrors(); got == nil || len(got) != 0 {
		t.Errorf("SourceErrors on a new store = %#v, want empty", got)
	}
	in := []SourceError{{Path: "/etc/crib/pods/b.yaml", Message: "bad"}, {Path: "/etc/crib/pods/a.yaml", Message: "worse"}}
	s.SetSourceErrors(in)
	in[0].Message = "changed"
	want := []SourceError{{Path: "/etc/crib/pods/a.yaml", Message: "worse"}, {Path: "/etc/crib/pods/b.yaml", Message: "bad"}}
	if diff := cmp.Diff(want, s.SourceErrors()); diff != "" {
		t.Errorf("SourceErrors (-want +got):\n%s", diff)
	}
	s.SetSourceErrors(nil)
	if got := s.SourceErrors(); len(got) != 0 {
		t.Errorf("SourceErrors after clearing = %v", got)
	}
}

func TestStoreConcurrent(t *testing.T) {
	s := NewStore()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 100 {
				uid := fmt.Sprintf("u%d-%d", i, j%5)
				s.Set(namedPod("default", uid, uid), corev1.PodStatus{Phase: corev1.PodRunning})
				s.List()
				s.Get(types.UID(uid))
				if j%3 == 0 {
					s.Delete(types.UID(uid))
				}
			}
		}()
	}
	wg.Wait()
	if n := len(s.List().Items); n > 40 {
		t.Errorf("%d pods, want at most 40", n)
	}
}

func TestNilPodAndMetrics(t *testing.T) {
	NewStore().Set(nil, corev1.PodStatus{}) // must not panic
	var m *Metrics
	m.ObservePodStart(time.Second) // nor these
	m.ObserveSync(time.Second)
	m.ContainerRestarted("a", "b", "c")
	m.ProbeResult("liveness", "success")
}
