package podstatus

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/plan"
)

func TestRestored(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "side"}},
		Containers:     []corev1.Container{{Name: "a"}, {Name: "b"}, {Name: "c"}},
	}}
	obs := plan.Observed{Containers: []plan.Container{
		{ID: "s", Name: "side", Type: labels.TypeInit, CreatedAt: t0, RestoredFrom: "/s.tar"},
		// a: restored, then restarted from its image: the newest counts.
		{ID: "a0", Name: "a", Type: labels.TypeApp, CreatedAt: t0, RestoredFrom: "/a.tar"},
		{ID: "a1", Name: "a", Type: labels.TypeApp, CreatedAt: t0.Add(time.Second), Attempt: 1},
		{ID: "b0", Name: "b", Type: labels.TypeApp, CreatedAt: t0, RestoredFrom: "/b.tar"},
	}}
	if diff := cmp.Diff([]string{"side", "b"}, Restored(pod, obs)); diff != "" {
		t.Errorf("Restored (-want +got):\n%s", diff)
	}
	if got := Restored(pod, plan.Observed{}); got != nil {
		t.Errorf("Restored of nothing observed = %v, want nil", got)
	}
}
