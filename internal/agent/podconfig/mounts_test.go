package podconfig

import (
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestMounts(t *testing.T) {
	volumes := map[string]string{
		"data":  "/var/lib/crib-agent/pods/u/volumes/data",
		"cfg":   "/var/lib/crib-agent/pods/u/volumes/cfg",
		"host":  "/srv",
		"empty": "",
		"img":   "", // the runtime mounts an image volume
	}
	imageVolumes := map[string]string{"img": "sha256:0123"}
	podVolumes := []corev1.Volume{
		{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "example.com/data:1"}}},
		{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv"}}},
	}
	mode := func(m corev1.MountPropagationMode) *corev1.MountPropagationMode { return &m }
	private := runtimeapi.MountPropagation_PROPAGATION_PRIVATE
	tests := []struct {
		name       string
		mounts     []corev1.VolumeMount
		privileged bool
		env        []corev1.EnvVar
		termHost   string
		subPaths   map[int]string
		want       []*runtimeapi.Mount
		class      error
		msg        []string
	}{
		{
			name:   "plain, readOnly, configMap forced read-only",
			mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "host", MountPath: "/h", ReadOnly: true}, {Name: "cfg", MountPath: "/etc/cfg"}},
			want: []*runtimeapi.Mount{
				{ContainerPath: "/data", HostPath: volumes["data"], Propagation: private},
				{ContainerPath: "/h", HostPath: "/srv", Readonly: true, Propagation: private},
				{ContainerPath: "/etc/cfg", HostPath: volumes["cfg"], Readonly: true, Propagation: private},
			},
		},
		{
			name:     "subPath",
			mounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/d"}, {Name: "data", MountPath: "/e", SubPath: "a/b"}},
			subPaths: map[int]string{1: "/pods/u/volume-subpaths/data/app/1"},
			want: []*runtimeapi.Mount{
				{ContainerPath: "/d", HostPath: volumes["data"], Propagation: private},
				{ContainerPath: "/e", HostPath: "/pods/u/volume-subpaths/data/app/1", Propagation: private},
			},
		},
		{
			name:     "subPath not prepared is never joined to the volume path",
			mounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: "a/b"}},
			subPaths: map[int]string{1: "/pods/u/volume-subpaths/data/app/1"},
			class:    errdefs.ErrFailedPrecondition, msg: []string{"volumeMounts[0] (data)", `"a/b"`, "not prepared"},
		},
		{
			name:     "subPathExpr",
			env:      []corev1.EnvVar{{Name: "POD", Value: "web"}},
			mounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPathExpr: "logs/$(POD)"}},
			subPaths: map[int]string{0: "/prepared"},
			want:     []*runtimeapi.Mount{{ContainerPath: "/d", HostPath: "/prepared", Propagation: private}},
		},
		{
			name:   "subPathExpr with unset variable",
			mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPathExpr: "logs/$(NOPE)"}},
			class:  errdefs.ErrInvalidArgument, msg: []string{"NOPE", "volumeMounts[0] (data)"},
		},
		{
			name:   "subPath with ..",
			mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: "a/../../etc"}},
			class:  errdefs.ErrInvalidArgument, msg: []string{"'..'", "a/../../etc"},
		},
		{
			name:   "absolute subPath",
			mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: "/etc"}},
			class:  errdefs.ErrInvalidArgument, msg: []string{"absolute"},
		},
		{
			name:     "subPath with .. in a name is fine",
			mounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: "a..b"}},
			subPaths: map[int]string{0: "/prepared"},
			want:     []*runtimeapi.Mount{{ContainerPath: "/d", HostPath: "/prepared", Propagation: private}},
		},
		{
			name:   "missing volume",
			mounts: []corev1.VolumeMount{{Name: "ghost", MountPath: "/g"}},
			class:  errdefs.ErrNotFound, msg: []string{`volume "ghost"`},
		},
		{
			name:   "volume without a host path",
			mounts: []corev1.VolumeMount{{Name: "empty", MountPath: "/g"}},
			class:  errdefs.ErrNotFound, msg: []string{`volume "empty"`},
		},
		{
			name: "propagation modes",
			mounts: []corev1.VolumeMount{
				{Name: "host", MountPath: "/a", MountPropagation: mode(corev1.MountPropagationNone)},
				{Name: "host", MountPath: "/b", MountPropagation: mode(corev1.MountPropagationHostToContainer)},
				{Name: "host", MountPath: "/c", MountPropagation: mode(corev1.MountPropagationBidirectional)},
			},
			privileged: true,
			want: []*runtimeapi.Mount{
				{ContainerPath: "/a", HostPath: "/srv", Propagation: private},
				{ContainerPath: "/b", HostPath: "/srv", Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
				{ContainerPath: "/c", HostPath: "/srv", Propagation: runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL},
			},
		},
		{
			name:   "bidirectional needs privileged",
			mounts: []corev1.VolumeMount{{Name: "host", MountPath: "/c", MountPropagation: mode(corev1.MountPropagationBidirectional)}},
			class:  errdefs.ErrInvalidArgument, msg: []string{"Bidirectional", "privileged"},
		},
		{
			name:   "unknown propagation",
			mounts: []corev1.VolumeMount{{Name: "host", MountPath: "/c", MountPropagation: mode("Sideways")}},
			class:  errdefs.ErrInvalidArgument, msg: []string{"Sideways"},
		},
		{
			name: "recursive read-only",
			mounts: []corev1.VolumeMount{{Name: "host", MountPath: "/r", ReadOnly: true,
				RecursiveReadOnly: ptr(corev1.RecursiveReadOnlyEnabled)}},
			want: []*runtimeapi.Mount{{ContainerPath: "/r", HostPath: "/srv", Readonly: true, RecursiveReadOnly: true, Propagation: private}},
		},
		{
			name: "recursive read-only needs readOnly",
			mounts: []corev1.VolumeMount{{Name: "host", MountPath: "/r",
				RecursiveReadOnly: ptr(corev1.RecursiveReadOnlyEnabled)}},
			class: errdefs.ErrInvalidArgument, msg: []string{"recursiveReadOnly"},
		},
		{
			name: "image volume: read-only, the subPath left to the runtime",
			mounts: []corev1.VolumeMount{
				{Name: "img", MountPath: "/img"},
				{Name: "img", MountPath: "/sub", SubPath: "usr/share", ReadOnly: true},
				{Name: "data", MountPath: "/data"},
			},
			want: []*runtimeapi.Mount{
				{ContainerPath: "/img", Image: &runtimeapi.ImageSpec{Image: "sha256:0123"}, Readonly: true},
				{ContainerPath: "/sub", Image: &runtimeapi.ImageSpec{Image: "sha256:0123"}, ImageSubPath: "usr/share", Readonly: true},
				{ContainerPath: "/data", HostPath: volumes["data"], Propagation: private},
			},
		},
		{
			name:   "image volume subPath stepping out",
			mounts: []corev1.VolumeMount{{Name: "img", MountPath: "/img", SubPath: "../etc"}},
			class:  errdefs.ErrInvalidArgument, msg: []string{"volumeMounts[0] (img)", "'..'"},
		},
		{
			name:   "bindMountOptions",
			mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data", BindMountOptions: []string{"noexec", "nosuid"}}},
			want:   []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: volumes["data"], Propagation: private, MountOptions: []string{"noexec", "nosuid"}}},
		},
		{
			name:   "image volume with bindMountOptions",
			mounts: []corev1.VolumeMount{{Name: "img", MountPath: "/img", BindMountOptions: []string{"noexec"}}},
			class:  errdefs.ErrInvalidArgument, msg: []string{"volumeMounts[0] (img)", "bindMountOptions"},
		},
		{
			name:   "image volume with propagation",
			mounts: []corev1.VolumeMount{{Name: "img", MountPath: "/img", MountPropagation: mode(corev1.MountPropagationHostToContainer)}},
			class:  errdefs.ErrInvalidArgument, msg: []string{"volumeMounts[0] (img)", "private"},
		},
		{
			name:     "termination message file last",
			mounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			termHost: "/var/lib/crib-agent/pods/u/containers/app/abcd",
			want: []*runtimeapi.Mount{
				{ContainerPath: "/data", HostPath: volumes["data"], Propagation: private},
				{ContainerPath: "/dev/termination-log", HostPath: "/var/lib/crib-agent/pods/u/containers/app/abcd"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(func(p *corev1.Pod) {
				p.Spec.Volumes = podVolumes
				c := &p.Spec.Containers[0]
				c.VolumeMounts = tt.mounts
				c.Env = tt.env
				if tt.privileged {
					c.SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
				}
			})
			cfg, err := ContainerConfig(testInput(pod, func(in *ContainerInput) {
				in.Volumes = volumes
				in.ImageVolumes = imageVolumes
				in.TerminationMessageHostPath = tt.termHost
				in.SubPaths = tt.subPaths
			}), Options{})
			checkErr(t, err, tt.class, tt.msg...)
			if err != nil {
				return
			}
			if d := diffProto(tt.want, cfg.Mounts); d != "" {
				t.Errorf("mounts (-want +got):\n%s", d)
			}
		})
	}
}

func TestSubPaths(t *testing.T) {
	tests := []struct {
		name   string
		mounts []corev1.VolumeMount
		env    []corev1.EnvVar
		want   map[int]string
		class  error
		msg    []string
	}{
		{
			name:   "none",
			mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d"}},
			want:   map[int]string{},
		},
		{
			name: "subPath and subPathExpr by index",
			env:  []corev1.EnvVar{{Name: "POD", Value: "web"}},
			mounts: []corev1.VolumeMount{
				{Name: "data", MountPath: "/d"},
				{Name: "data", MountPath: "/e", SubPath: "a/b"},
				{Name: "data", MountPath: "/f", SubPathExpr: "logs/$(POD)"},
			},
			want: map[int]string{1: "a/b", 2: "logs/web"},
		},
		{
			name: "image volumes are left to the runtime",
			mounts: []corev1.VolumeMount{
				{Name: "img", MountPath: "/i", SubPath: "a"},
				{Name: "data", MountPath: "/e", SubPath: "a/b"},
			},
			want: map[int]string{1: "a/b"},
		},
		{
			name:   "unset variable",
			mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPathExpr: "$(NOPE)"}},
			class:  errdefs.ErrInvalidArgument, msg: []string{`container "app"`, "volumeMounts[0] (data)", "NOPE"},
		},
		{
			name:   "expansion that steps out",
			env:    []corev1.EnvVar{{Name: "UP", Value: ".."}},
			mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPathExpr: "$(UP)/x"}},
			class:  errdefs.ErrInvalidArgument, msg: []string{"'..'"},
		},
		{
			name:   "absolute",
			mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d"}, {Name: "data", MountPath: "/e", SubPath: "/etc"}},
			class:  errdefs.ErrInvalidArgument, msg: []string{"volumeMounts[1] (data)", "absolute"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(func(p *corev1.Pod) {
				c := &p.Spec.Containers[0]
				c.VolumeMounts = tt.mounts
				c.Env = tt.env
			})
			got, err := SubPaths(testInput(pod, func(in *ContainerInput) {
				in.ImageVolumes = map[string]string{"img": "sha256:0123"}
			}), Options{})
			checkErr(t, err, tt.class, tt.msg...)
			if err != nil {
				return
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("SubPaths (-want +got):\n%s", d)
			}
		})
	}
}
