package podconfig

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestQOSClass(t *testing.T) {
	none := corev1.ResourceRequirements{}
	tests := []struct {
		name    string
		app     []corev1.ResourceRequirements
		init    []corev1.ResourceRequirements
		podRes  *corev1.ResourceRequirements
		wantQOS corev1.PodQOSClass
	}{
		{"nothing", []corev1.ResourceRequirements{none}, nil, nil, corev1.PodQOSBestEffort},
		{"zero quantities count as nothing", []corev1.ResourceRequirements{resources([]string{"0", "0"}, nil)}, nil, nil, corev1.PodQOSBestEffort},
		{"other resources do not count", []corev1.ResourceRequirements{{Limits: rl("ephemeral-storage", "1Gi")}}, nil, nil, corev1.PodQOSBestEffort},
		{"equal requests and limits", []corev1.ResourceRequirements{resources([]string{"1", "1Gi"}, []string{"1", "1Gi"})}, nil, nil, corev1.PodQOSGuaranteed},
		{"limits only (requests default to them)", []corev1.ResourceRequirements{resources(nil, []string{"500m", "128Mi"})}, nil, nil, corev1.PodQOSGuaranteed},
		{"request below limit", []corev1.ResourceRequirements{resources([]string{"500m", "1Gi"}, []string{"1", "1Gi"})}, nil, nil, corev1.PodQOSBurstable},
		{"memory limit only", []corev1.ResourceRequirements{resources(nil, []string{"", "1Gi"})}, nil, nil, corev1.PodQOSBurstable},
		{"request only", []corev1.ResourceRequirements{resources([]string{"100m", ""}, nil)}, nil, nil, corev1.PodQOSBurstable},
		{"one guaranteed, one best effort", []corev1.ResourceRequirements{resources(nil, []string{"1", "1Gi"}), none}, nil, nil, corev1.PodQOSBurstable},
		{"init container without limits breaks guaranteed",
			[]corev1.ResourceRequirements{resources(nil, []string{"1", "1Gi"})}, []corev1.ResourceRequirements{none}, nil, corev1.PodQOSBurstable},
		{"init container alone makes burstable",
			[]corev1.ResourceRequirements{none}, []corev1.ResourceRequirements{resources([]string{"1", ""}, nil)}, nil, corev1.PodQOSBurstable},
		{"pod-level resources win", []corev1.ResourceRequirements{none}, nil,
			&corev1.ResourceRequirements{Limits: rl("cpu", "1", "memory", "1Gi")}, corev1.PodQOSGuaranteed},
		{"pod-level requests only", []corev1.ResourceRequirements{resources(nil, []string{"1", "1Gi"})}, nil,
			&corev1.ResourceRequirements{Requests: rl("cpu", "1")}, corev1.PodQOSBurstable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(func(p *corev1.Pod) {
				p.Spec.Containers = nil
				for i, r := range tt.app {
					p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "a" + string(rune('0'+i)), Resources: r})
				}
				for i, r := range tt.init {
					p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "i" + string(rune('0'+i)), Resources: r})
				}
				p.Spec.Resources = tt.podRes
			})
			if got := QOSClass(pod); got != tt.wantQOS {
				t.Errorf("QOSClass = %s, want %s", got, tt.wantQOS)
			}
		})
	}
}

// TestQOSClassFromSpec pins what status's former copy did differently: the
// class comes from the spec even when the pod carries one in its status,
// and pod-level resources count even when no container sets any.
func TestQOSClassFromSpec(t *testing.T) {
	pod := testPod(func(p *corev1.Pod) {
		p.Status.QOSClass = corev1.PodQOSGuaranteed
	})
	if got := QOSClass(pod); got != corev1.PodQOSBestEffort {
		t.Errorf("with status Guaranteed: QOSClass = %s, want BestEffort", got)
	}
	pod = testPod(func(p *corev1.Pod) {
		p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("memory", "64Mi")}
	})
	if got := QOSClass(pod); got != corev1.PodQOSBurstable {
		t.Errorf("pod-level request only: QOSClass = %s, want Burstable", got)
	}
	pod = testPod(func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources = resources(nil, []string{"1", "1Gi"})
		p.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways)}}
	})
	if got := QOSClass(pod); got != corev1.PodQOSBurstable {
		t.Errorf("sidecar without limits: QOSClass = %s, want Burstable", got)
	}
}

func TestContainerResources(t *testing.T) {
	const nodeMem = 8 << 30
	tests := []struct {
		name   string
		res    corev1.ResourceRequirements
		other  *corev1.ResourceRequirements // a second app container
		prio   string
		opts   Options
		want   *runtimeapi.LinuxContainerResources
		wantQ  corev1.PodQOSClass
		sndbox *runtimeapi.LinuxContainerResources
	}{
		{
			name:  "best effort",
			opts:  Options{NodeMemoryBytes: nodeMem},
			wantQ: corev1.PodQOSBestEffort,
			want:  &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000},
		},
		{
			name:  "guaranteed",
			res:   resources([]string{"1500m", "512Mi"}, []string{"1500m", "512Mi"}),
			opts:  Options{NodeMemoryBytes: nodeMem},
			wantQ: corev1.PodQOSGuaranteed,
			want: &runtimeapi.LinuxContainerResources{CpuShares: 1536, CpuPeriod: 100000, CpuQuota: 150000,
				MemoryLimitInBytes: 512 << 20, OomScoreAdj: -997},
		},
		{
			name:  "burstable: 2Gi of 8Gi requested scores 750",
			res:   resources([]string{"250m", "2Gi"}, []string{"1", "4Gi"}),
			opts:  Options{NodeMemoryBytes: nodeMem},
			wantQ: corev1.PodQOSBurstable,
			want: &runtimeapi.LinuxContainerResources{CpuShares: 256, CpuPeriod: 100000, CpuQuota: 100000,
				MemoryLimitInBytes: 4 << 30, OomScoreAdj: 750},
		},
		{
			name:  "burstable: cpu limit only defaults shares to the limit, tiny memory scores 999",
			res:   resources(nil, []string{"1m", ""}),
			opts:  Options{NodeMemoryBytes: nodeMem},
			wantQ: corev1.PodQOSBurstable,
			want:  &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, CpuQuota: 1000, OomScoreAdj: 999},
		},
		{
			name:  "burstable: requesting all memory is clamped to 3",
			res:   resources([]string{"", "8Gi"}, nil),
			opts:  Options{NodeMemoryBytes: nodeMem},
			wantQ: corev1.PodQOSBurstable,
			want:  &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 3},
		},
		{
			name:  "burstable with node memory unknown",
			res:   resources([]string{"", "2Gi"}, nil),
			wantQ: corev1.PodQOSBurstable,
			want:  &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 999},
		},
		{
			name:  "shares are capped",
			res:   resources([]string{"300", ""}, nil),
			opts:  Options{NodeMemoryBytes: nodeMem},
			wantQ: corev1.PodQOSBurstable,
			want:  &runtimeapi.LinuxContainerResources{CpuShares: 262144, CpuPeriod: 100000, OomScoreAdj: 999},
		},
		{
			name:  "node-critical pods score like guaranteed",
			prio:  "system-node-critical",
			opts:  Options{NodeMemoryBytes: nodeMem},
			wantQ: corev1.PodQOSBestEffort,
			want:  &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: -997},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources = tt.res
				p.Spec.PriorityClassName = tt.prio
			})
			if q := QOSClass(pod); q != tt.wantQ {
				t.Fatalf("QOSClass = %s, want %s", q, tt.wantQ)
			}
			cfg, err := ContainerConfig(testInput(pod), tt.opts)
			checkErr(t, err, nil)
			if d := diffProto(tt.want, cfg.Linux.Resources); d != "" {
				t.Errorf("resources (-want +got):\n%s", d)
			}
		})
	}
}

func TestSidecarOOMScore(t *testing.T) {
	pod := testPod(func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources = resources([]string{"", "4Gi"}, nil)
		p.Spec.InitContainers = []corev1.Container{
			{Name: "sidecar", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways), Resources: resources([]string{"", "1Gi"}, nil)},
			{Name: "init", Resources: resources([]string{"", "1Gi"}, nil)},
		}
	})
	opts := Options{NodeMemoryBytes: 8 << 30}
	for name, want := range map[string]int64{"sidecar": 500, "init": 875} {
		c := findContainer(pod, name)
		cfg, err := ContainerConfig(testInput(pod, func(in *ContainerInput) { in.Container, in.Type = c, "init" }), opts)
		checkErr(t, err, nil)
		if got := cfg.Linux.Resources.OomScoreAdj; got != want {
			t.Errorf("%s: oom_score_adj = %d, want %d", name, got, want)
		}
	}
}

func TestSandboxResources(t *testing.T) {
	always := ptr(corev1.ContainerRestartPolicyAlways)
	tests := []struct {
		name     string
		app      []corev1.ResourceRequirements
		init     []corev1.Container
		overhead corev1.ResourceList
		want     *runtimeapi.LinuxContainerResources
		wantOver *runtimeapi.LinuxContainerResources
	}{
		{
			name:     "sum of app containers",
			app:      []corev1.ResourceRequirements{resources([]string{"250m", "64Mi"}, []string{"500m", "128Mi"}), resources([]string{"250m", ""}, []string{"", "128Mi"})},
			want:     &runtimeapi.LinuxContainerResources{CpuShares: 512, CpuPeriod: 100000, CpuQuota: 50000, MemoryLimitInBytes: 256 << 20},
			wantOver: &runtimeapi.LinuxContainerResources{},
		},
		{
			name: "a big init container sets the peak",
			app:  []corev1.ResourceRequirements{resources(nil, []string{"500m", "128Mi"})},
			init: []corev1.Container{{Name: "i", Resources: resources(nil, []string{"2", "1Gi"})}},
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2048, CpuPeriod: 100000, CpuQuota: 200000, MemoryLimitInBytes: 1 << 30},
			// Overhead counts as request and limit.
			overhead: rl("cpu", "100m", "memory", "32Mi"),
			wantOver: &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000, CpuQuota: 10000, MemoryLimitInBytes: 32 << 20},
		},
		{
			name: "sidecars add to the app containers and to later init containers",
			app:  []corev1.ResourceRequirements{resources(nil, []string{"1", "256Mi"})},
			init: []corev1.Container{
				{Name: "side", RestartPolicy: always, Resources: resources(nil, []string{"500m", "128Mi"})},
				{Name: "i", Resources: resources(nil, []string{"1", "512Mi"})},
			},
			// app+sidecar = 1500m/384Mi; init+sidecar = 1500m/640Mi.
			want:     &runtimeapi.LinuxContainerResources{CpuShares: 1536, CpuPeriod: 100000, CpuQuota: 150000, MemoryLimitInBytes: 640 << 20},
			wantOver: &runtimeapi.LinuxContainerResources{},
		},
		{
			name:     "nothing",
			app:      []corev1.ResourceRequirements{{}},
			want:     &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000},
			wantOver: &runtimeapi.LinuxContainerResources{},
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
				p.Spec.Overhead = tt.overhead
			})
			cfg, err := SandboxConfig(pod, 0, nil, Options{})
			checkErr(t, err, nil)
			if d := diffProto(tt.want, cfg.Linux.Resources); d != "" {
				t.Errorf("resources (-want +got):\n%s", d)
			}
			if d := diffProto(tt.wantOver, cfg.Linux.Overhead); d != "" {
				t.Errorf("overhead (-want +got):\n%s", d)
			}
		})
	}
}

func TestCgroupParent(t *testing.T) {
	guaranteed := resources(nil, []string{"1", "1Gi"})
	burstable := resources([]string{"1", ""}, nil)
	tests := []struct {
		parent string
		res    corev1.ResourceRequirements
		want   string
	}{
		{"", guaranteed, ""},
		{"/kubepods", guaranteed, "/kubepods/pod1234-abcd"},
		{"/kubepods", burstable, "/kubepods/burstable/pod1234-abcd"},
		{"/kubepods", corev1.ResourceRequirements{}, "/kubepods/besteffort/pod1234-abcd"},
		{"kubepods", burstable, "kubepods/burstable/pod1234-abcd"},
		{"kubepods.slice", guaranteed, "kubepods-pod1234_abcd.slice"},
		{"kubepods.slice", burstable, "kubepods-burstable-pod1234_abcd.slice"},
		{"kubepods.slice", corev1.ResourceRequirements{}, "kubepods-besteffort-pod1234_abcd.slice"},
	}
	for _, tt := range tests {
		pod := testPod(func(p *corev1.Pod) { p.Spec.Containers[0].Resources = tt.res })
		cfg, err := SandboxConfig(pod, 0, nil, Options{CgroupParent: tt.parent})
		checkErr(t, err, nil)
		if got := cfg.Linux.CgroupParent; got != tt.want {
			t.Errorf("parent %q, %s: cgroup parent = %q, want %q", tt.parent, QOSClass(pod), got, tt.want)
		}
	}
}
