package plan

import (
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func hashPod() *corev1.Pod {
	p := newPod(always)
	p.Spec.Volumes = []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "other", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv"}}},
	}
	c := &p.Spec.Containers[0]
	c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	c.Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
	c.Resources.Limits = corev1.ResourceList{
		corev1.ResourceMemory: resource.MustParse("64Mi"),
		corev1.ResourceCPU:    resource.MustParse("500m"),
	}
	return p
}

// TestContainerHashGolden pins the hash of one spec: if this changes, every
// container the agent runs restarts after an upgrade.
func TestContainerHashGolden(t *testing.T) {
	p := hashPod()
	got := ContainerHash(p, &p.Spec.Containers[0])
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(got) {
		t.Fatalf("ContainerHash = %q, want 16 hex digits", got)
	}
	const golden = "4be37fc7312ecf25"
	if got != golden {
		t.Errorf("ContainerHash = %s, want %s", got, golden)
	}
}

func TestContainerHash(t *testing.T) {
	base := hashPod()
	baseHash := ContainerHash(base, &base.Spec.Containers[0])

	tests := []struct {
		name    string
		edit    func(p *corev1.Pod)
		changed bool
	}{
		{"deep copy", func(*corev1.Pod) {}, false},
		{"same quantity written differently", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("0.5")
		}, false},
		{"unreferenced volume changed", func(p *corev1.Pod) { p.Spec.Volumes[1].HostPath.Path = "/elsewhere" }, false},
		{"pod-level field", func(p *corev1.Pod) { p.Spec.HostNetwork = true }, false},
		{"other container", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side", Image: "x"})
		}, false},
		{"image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "busybox:1.37" }, true},
		{"command", func(p *corev1.Pod) { p.Spec.Containers[0].Command = []string{"sleep", "1"} }, true},
		{"args", func(p *corev1.Pod) { p.Spec.Containers[0].Args = []string{"-v"} }, true},
		{"env", func(p *corev1.Pod) { p.Spec.Containers[0].Env[0].Value = "2" }, true},
		{"resources", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("128Mi")
		}, true},
		{"probe", func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		}, true},
		{"mount", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].ReadOnly = true }, true},
		{"referenced volume changed", func(p *corev1.Pod) { p.Spec.Volumes[0].EmptyDir.Medium = corev1.StorageMediumMemory }, true},
		{"referenced volume replaced", func(p *corev1.Pod) {
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}}
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := base.DeepCopy()
			tc.edit(p)
			got := ContainerHash(p, &p.Spec.Containers[0])
			if (got != baseHash) != tc.changed {
				t.Errorf("hash %s vs base %s: changed = %v, want %v", got, baseHash, got != baseHash, tc.changed)
			}
		})
	}
}

func TestContainerHashNilPod(t *testing.T) {
	c := &corev1.Container{Name: "app", Image: "busybox"}
	if a, b := ContainerHash(nil, c), ContainerHash(&corev1.Pod{}, c); a != b {
		t.Errorf("nil pod hash %s != empty pod hash %s", a, b)
	}
}
