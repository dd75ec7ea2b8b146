package podcgroup

import (
	"testing"

	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/cgroupfs"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestPodLimits(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	gi := int64(1 << 30)
	mi := int64(1 << 20)
	tests := []struct {
		name   string
		pod    *corev1.Pod
		mutate func(*corev1.Pod)
		want   cgroupfs.Limits
	}{
		{
			name: "best effort",
			pod:  pod("u", res("", "")),
			want: cgroupfs.Limits{CPUShares: 2, CPUQuota: -1, CPUPeriod: 100000, Memory: -1},
		},
		{
			name: "guaranteed sums containers",
			pod:  pod("u", res("", "1,1Gi"), res("500m,512Mi", "500m,512Mi")),
			want: cgroupfs.Limits{CPUShares: 1536, CPUQuota: 150000, CPUPeriod: 100000, Memory: gi + 512*mi},
		},
		{
			name: "burstable requests only: no quota, no memory limit",
			pod:  pod("u", res("250m,64Mi", "")),
			want: cgroupfs.Limits{CPUShares: 256, CPUQuota: -1, CPUPeriod: 100000, Memory: -1},
		},
		{
			name: "burstable with every limit declared",
			pod:  pod("u", res("100m,64Mi", "200m,128Mi"), res("", "300m,64Mi")),
			want: cgroupfs.Limits{CPUShares: 409, CPUQuota: 50000, CPUPeriod: 100000, Memory: 192 * mi},
		},
		{
			name: "one container without a cpu limit: no quota, memory still limited",
			pod:  pod("u", res("100m", "200m,128Mi"), res("100m", ",64Mi")),
			want: cgroupfs.Limits{CPUShares: 204, CPUQuota: -1, CPUPeriod: 100000, Memory: 192 * mi},
		},
		{
			name: "one container without a memory limit",
			pod:  pod("u", res("", "1,128Mi"), res("", "1")),
			want: cgroupfs.Limits{CPUShares: 2048, CPUQuota: 200000, CPUPeriod: 100000, Memory: -1},
		},
		{
			name: "tiny cpu: minimum shares and quota",
			pod:  pod("u", res("1m", "1m,1Mi"), res("", "")),
			want: cgroupfs.Limits{CPUShares: 2, CPUQuota: -1, CPUPeriod: 100000, Memory: -1},
		},
		{
			name: "guaranteed tiny cpu: quota raised to 1ms",
			pod:  pod("u", res("", "1m,4Mi")),
			want: cgroupfs.Limits{CPUShares: 2, CPUQuota: 1000, CPUPeriod: 100000, Memory: 4 * mi},
		},
		{
			name: "huge request capped",
			pod:  pod("u", res("1000,1Gi", "")),
			want: cgroupfs.Limits{CPUShares: 262144, CPUQuota: -1, CPUPeriod: 100000, Memory: -1},
		},
		{
			name: "larger init container wins",
			pod:  pod("u", res("", "1,1Gi")),
			mutate: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: res("", "2,2Gi")}}
			},
			want: cgroupfs.Limits{CPUShares: 2048, CPUQuota: 200000, CPUPeriod: 100000, Memory: 2 * gi},
		},
		{
			name: "init container without limits removes the pod's",
			pod:  pod("u", res("", "1,1Gi")),
			mutate: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: res("100m", "")}}
			},
			want: cgroupfs.Limits{CPUShares: 1024, CPUQuota: -1, CPUPeriod: 100000, Memory: -1},
		},
		{
			name: "sidecar adds up; later init container counts beside it",
			pod:  pod("u", res("", "1,1Gi")),
			mutate: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{
					{Name: "side", RestartPolicy: &always, Resources: res("", "500m,256Mi")},
					{Name: "init", Resources: res("", "")},
				}
			},
			// the init container limits nothing but runs beside the limited
			// sidecar, so its effective limits are the sidecar's.
			want: cgroupfs.Limits{CPUShares: 1536, CPUQuota: 150000, CPUPeriod: 100000, Memory: gi + 256*mi},
		},
		{
			name: "overhead added to requests and to set limits",
			pod:  pod("u", res("", "1,1Gi")),
			mutate: func(p *corev1.Pod) {
				p.Spec.Overhead = list("250m,64Mi")
			},
			want: cgroupfs.Limits{CPUShares: 1280, CPUQuota: 125000, CPUPeriod: 100000, Memory: gi + 64*mi},
		},
		{
			name: "overhead not added to an unset limit",
			pod:  pod("u", res("100m,", "")),
			mutate: func(p *corev1.Pod) {
				p.Spec.Overhead = list("100m,64Mi")
			},
			want: cgroupfs.Limits{CPUShares: 204, CPUQuota: -1, CPUPeriod: 100000, Memory: -1},
		},
		{
			name: "pod-level limits win and count as declared",
			pod:  pod("u", res("100m", ""), res("", "")),
			mutate: func(p *corev1.Pod) {
				p.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi"),
				}}
			},
			// pod-level requests default to the limits: Guaranteed.
			want: cgroupfs.Limits{CPUShares: 2048, CPUQuota: 200000, CPUPeriod: 100000, Memory: gi},
		},
		{
			name: "pod-level memory limit only",
			pod:  pod("u", res("100m", "")),
			mutate: func(p *corev1.Pod) {
				p.Spec.Resources = &corev1.ResourceRequirements{
					Requests: list("500m,"),
					Limits:   list(",256Mi"),
				}
			},
			want: cgroupfs.Limits{CPUShares: 512, CPUQuota: -1, CPUPeriod: 100000, Memory: 256 * mi},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.mutate != nil {
				tt.mutate(tt.pod)
			}
			if d := cmp.Diff(tt.want, PodLimits(tt.pod)); d != "" {
				t.Errorf("PodLimits (-want +got):\n%s", d)
			}
		})
	}
}

// TestCPUBoundsAgree keeps the one conversion (podconfig's) and the bounds
// cgroupfs writes and maps to cpu.weight from drifting apart.
func TestCPUBoundsAgree(t *testing.T) {
	if podconfig.MinShares != cgroupfs.MinShares || podconfig.MaxShares != cgroupfs.MaxShares {
		t.Errorf("shares bounds: podconfig [%d, %d], cgroupfs [%d, %d]",
			podconfig.MinShares, podconfig.MaxShares, cgroupfs.MinShares, cgroupfs.MaxShares)
	}
	if podconfig.QuotaPeriod != cgroupfs.DefaultPeriod {
		t.Errorf("period: podconfig %d, cgroupfs %d", podconfig.QuotaPeriod, cgroupfs.DefaultPeriod)
	}
}
