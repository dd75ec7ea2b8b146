package podconfig

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestPodResources(t *testing.T) {
	always := ptr(corev1.ContainerRestartPolicyAlways)
	const mi = 1 << 20
	tests := []struct {
		name     string
		app      []corev1.ResourceRequirements
		init     []corev1.Container
		podRes   *corev1.ResourceRequirements
		overhead corev1.ResourceList
		want     Resources
		wantOver Resources
	}{
		{
			name:     "nothing declared",
			app:      []corev1.ResourceRequirements{{}},
			overhead: rl("cpu", "100m", "memory", "64Mi"),
			want:     Resources{},
			wantOver: Resources{CPURequest: 100},
		},
		{
			name: "every container limits both; requests default to limits",
			app: []corev1.ResourceRequirements{
				resources([]string{"100m", "64Mi"}, []string{"200m", "128Mi"}),
				resources(nil, []string{"300m", "64Mi"}),
			},
			overhead: rl("cpu", "50m", "memory", "16Mi"),
			want:     Resources{CPURequest: 400, CPULimit: 500, MemoryLimit: 192 * mi, CPULimitDeclared: true, MemoryLimitDeclared: true},
			wantOver: Resources{CPURequest: 450, CPULimit: 550, MemoryLimit: 208 * mi, CPULimitDeclared: true, MemoryLimitDeclared: true},
		},
		{
			name: "one container without a cpu limit",
			app: []corev1.ResourceRequirements{
				resources(nil, []string{"200m", "128Mi"}),
				resources([]string{"100m", ""}, []string{"", "64Mi"}),
			},
			want: Resources{CPURequest: 300, CPULimit: 200, MemoryLimit: 192 * mi, MemoryLimitDeclared: true},
		},
		{
			name: "an init container beside a sidecar is counted with it",
			app:  []corev1.ResourceRequirements{resources(nil, []string{"1", "1Gi"})},
			init: []corev1.Container{
				{Name: "side", RestartPolicy: always, Resources: resources(nil, []string{"500m", "256Mi"})},
				{Name: "init"},
			},
			want: Resources{CPURequest: 1500, CPULimit: 1500, MemoryLimit: 1280 * mi, CPULimitDeclared: true, MemoryLimitDeclared: true},
		},
		{
			name: "a classic init container without limits undeclares them",
			app:  []corev1.ResourceRequirements{resources(nil, []string{"1", "1Gi"})},
			init: []corev1.Container{{Name: "init", Resources: resources([]string{"2", ""}, nil)}},
			want: Resources{CPURequest: 2000, CPULimit: 1000, MemoryLimit: 1024 * mi},
		},
		{
			name:   "pod-level values replace the aggregate and declare",
			app:    []corev1.ResourceRequirements{resources([]string{"100m", ""}, nil)},
			podRes: &corev1.ResourceRequirements{Limits: rl("cpu", "2", "memory", "1Gi")},
			want:   Resources{CPURequest: 2000, CPULimit: 2000, MemoryLimit: 1024 * mi, CPULimitDeclared: true, MemoryLimitDeclared: true},
		},
		{
			// As the kubelet's PodLimits: a pod-level limit replaces the
			// aggregate even when zero, but does not declare it.
			name:   "zero pod-level limit",
			app:    []corev1.ResourceRequirements{resources(nil, []string{"1", "1Gi"})},
			podRes: &corev1.ResourceRequirements{Requests: rl("cpu", "0"), Limits: rl("cpu", "0")},
			want:   Resources{CPURequest: 0, CPULimit: 0, MemoryLimit: 1024 * mi, CPULimitDeclared: true, MemoryLimitDeclared: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(func(p *corev1.Pod) {
				p.Spec.Containers = nil
				for i, r := range tt.app {
					p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "a" + string(rune('0'+i)), Resources: r})
				}
				p.Spec.InitContainers = tt.init
				p.Spec.Resources = tt.podRes
			})
			got := PodResources(pod)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("PodResources (-want +got):\n%s", d)
			}
			wantOver := tt.wantOver
			if tt.overhead == nil {
				wantOver = tt.want
			}
			if d := cmp.Diff(wantOver, got.WithOverhead(tt.overhead)); d != "" {
				t.Errorf("WithOverhead (-want +got):\n%s", d)
			}
		})
	}
}
