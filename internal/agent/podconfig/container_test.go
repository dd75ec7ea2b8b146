package podconfig

import (
	"testing"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
)

func TestContainerConfig(t *testing.T) {
	pod := testPod(func(p *corev1.Pod) {
		c := &p.Spec.Containers[0]
		c.Command = []string{"/bin/sh", "-c"}
		c.Args = []string{"echo $(GREETING) $(NAME) $$(NAME) $(MISSING)", "$(LATE)"}
		c.Env = []corev1.EnvVar{
			{Name: "GREETING", Value: "hello"},
			{Name: "NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "LATE", Value: "late"},
		}
		c.WorkingDir = "/work"
		c.Stdin, c.StdinOnce, c.TTY = true, true, true
		c.Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		c.Resources = resources([]string{"1", "1Gi"}, []string{"1", "1Gi"})
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	})
	in := testInput(pod, func(in *ContainerInput) {
		in.Volumes = map[string]string{"data": "/v/data"}
		in.TerminationMessageHostPath = "/v/term"
	})
	got, err := ContainerConfig(in, Options{NodeMemoryBytes: 4 << 30})
	checkErr(t, err, nil)
	want := &runtimeapi.ContainerConfig{
		Metadata:   &runtimeapi.ContainerMetadata{Name: "app", Attempt: 2},
		Image:      &runtimeapi.ImageSpec{Image: "sha256:abc", UserSpecifiedImage: "busybox:1.36"},
		Command:    []string{"/bin/sh", "-c"},
		Args:       []string{"echo hello web $(NAME) $(MISSING)", "late"},
		WorkingDir: "/work",
		Envs:       kvs("GREETING", "hello", "NAME", "web", "LATE", "late"),
		Mounts: []*runtimeapi.Mount{
			{ContainerPath: "/data", HostPath: "/v/data", Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE},
			{ContainerPath: "/dev/termination-log", HostPath: "/v/term"},
		},
		Labels: map[string]string{
			labels.PodName: "web", labels.PodNamespace: "default", labels.PodUID: "1234-abcd",
			labels.ContainerName: "app", labels.ManagedBy: labels.ManagedByValue,
		},
		Annotations: map[string]string{
			labels.ContainerHash: "h1", labels.RestartCount: "2", labels.ContainerType: "app",
			labels.TerminationMessagePath: "/dev/termination-log", labels.TerminationGracePeriod: "30",
		},
		LogPath: "app/2.log",
		Stdin:   true, StdinOnce: true, Tty: true,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources: &runtimeapi.LinuxContainerResources{CpuShares: 1024, CpuPeriod: 100000, CpuQuota: 100000,
				MemoryLimitInBytes: 1 << 30, OomScoreAdj: -997},
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				RunAsUser: &runtimeapi.Int64Value{Value: 1000}, NamespaceOptions: podNS(), Seccomp: unconfined(),
				MaskedPaths: kubeletMaskedPaths, ReadonlyPaths: kubeletReadonlyPaths,
			},
		},
	}
	if d := diffProto(want, got); d != "" {
		t.Errorf("container config (-want +got):\n%s", d)
	}
	// Deterministic: the same input gives the same config.
	again, err := ContainerConfig(in, Options{NodeMemoryBytes: 4 << 30})
	checkErr(t, err, nil)
	if d := diffProto(got, again); d != "" {
		t.Errorf("second config differs (-first +second):\n%s", d)
	}
}

func TestContainerConfigNoCommand(t *testing.T) {
	pod := testPod(func(p *corev1.Pod) {
		p.Spec.TerminationGracePeriodSeconds = nil
		p.Spec.Containers[0].TerminationMessagePath = ""
	})
	got, err := ContainerConfig(testInput(pod, func(in *ContainerInput) {
		in.Type, in.RestartCount, in.TerminationMessageHostPath = labels.TypeInit, 0, "/v/term"
	}), Options{})
	checkErr(t, err, nil)
	if got.Command != nil || got.Args != nil {
		t.Errorf("command %q args %q, want none (the image's)", got.Command, got.Args)
	}
	if len(got.Mounts) != 0 {
		t.Errorf("mounts %v, want none without a terminationMessagePath", got.Mounts)
	}
	wantAnn := map[string]string{labels.ContainerHash: "h1", labels.RestartCount: "0", labels.ContainerType: "init"}
	if d := diffProto(wantAnn, got.Annotations); d != "" {
		t.Errorf("annotations (-want +got):\n%s", d)
	}
	if got.LogPath != "app/0.log" {
		t.Errorf("log path %q, want app/0.log", got.LogPath)
	}
}

func TestContainerConfigInputErrors(t *testing.T) {
	pod := testPod()
	tests := []struct {
		name string
		in   ContainerInput
		msg  string
	}{
		{"no container", ContainerInput{Pod: pod, Type: labels.TypeApp}, "container is nil"},
		{"no pod", ContainerInput{Container: &pod.Spec.Containers[0], Type: labels.TypeApp}, "pod is nil"},
		{"bad type", testInput(pod, func(in *ContainerInput) { in.Type = "sidecar" }), "sidecar"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ContainerConfig(tt.in, Options{})
			checkErr(t, err, errdefs.ErrInvalidArgument, tt.msg)
		})
	}
}
