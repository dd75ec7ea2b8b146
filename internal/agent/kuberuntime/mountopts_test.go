package kuberuntime

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// featuresRuntime reports runtime-wide features in Status.
type featuresRuntime struct {
	internalapi.RuntimeService
	features *runtimeapi.RuntimeFeatures
}

func (r featuresRuntime) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{}, Features: r.features}, nil
}

func withMountOptions(supported bool) func(*Config) {
	return func(c *Config) {
		c.Runtime = featuresRuntime{RuntimeService: c.Runtime, features: &runtimeapi.RuntimeFeatures{MountOptions: supported}}
	}
}

// noexecData gives the pod a volume that container mounts noexec.
func noexecData(container func(*corev1.Pod) *corev1.Container) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		c := container(p)
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/data", BindMountOptions: []string{"noexec"}})
	}
}

func appContainer(p *corev1.Pod) *corev1.Container { return &p.Spec.Containers[0] }

func initContainer(p *corev1.Pod) *corev1.Container {
	p.Spec.InitContainers = []corev1.Container{testContainer("init")}
	return &p.Spec.InitContainers[0]
}

// TestBindMountOptionsNeedTheRuntimeFeature: as the kubelet, the agent
// refuses a pod asking for bind mount options before making its sandbox
// unless the runtime reports mount_options, and passes them on if it does.
func TestBindMountOptionsNeedTheRuntimeFeature(t *testing.T) {
	for _, tt := range []struct {
		name      string
		container func(*corev1.Pod) *corev1.Container
		mutate    []func(*Config)
	}{
		{"runtime without the feature", appContainer, []func(*Config){withMountOptions(false)}},
		{"runtime that reports no features", appContainer, nil},
		{"init container", initContainer, []func(*Config){withMountOptions(false)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.mutate...)
			res := e.sync(testPod(noexecData(tt.container)))
			if res.Err == nil || !strings.Contains(res.SandboxError, "does not support mount options") {
				t.Fatalf("sandbox error = %q (err %v), want one saying the runtime does not support mount options", res.SandboxError, res.Err)
			}
			if got := withPrefix(e.log.since(0), "RunPodSandbox"); len(got) != 0 {
				t.Fatalf("a sandbox was made: %v", got)
			}
		})
	}

	e := newEnv(t, withMountOptions(true))
	e.mustSync(testPod(noexecData(appContainer)))
	e.rt.mu.Lock()
	created := e.rt.created
	e.rt.mu.Unlock()
	if len(created) != 1 {
		t.Fatalf("%d containers made, want 1", len(created))
	}
	for _, m := range created[0].GetMounts() {
		if m.GetContainerPath() == "/data" {
			if got := m.GetMountOptions(); len(got) != 1 || got[0] != "noexec" {
				t.Errorf("/data mount options = %q, want [noexec]", got)
			}
			return
		}
	}
	t.Errorf("no /data mount in %v", created[0].GetMounts())
}
