package podconfig

import (
	"testing"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func kvs(pairs ...string) []*runtimeapi.KeyValue {
	out := []*runtimeapi.KeyValue{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, &runtimeapi.KeyValue{Key: pairs[i], Value: []byte(pairs[i+1])})
	}
	return out
}

func objects() (map[string]*corev1.ConfigMap, map[string]*corev1.Secret) {
	cms := map[string]*corev1.ConfigMap{
		"default/cfg": {ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"},
			Data: map[string]string{"B_KEY": "b", "A_KEY": "a", "bad=name": "x", "tab\tname": "y", "mode": "prod"}},
		"other/cfg": {ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "other"},
			Data: map[string]string{"mode": "wrong-namespace"}},
	}
	secrets := map[string]*corev1.Secret{
		"default/creds": {ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"},
			Data:       map[string][]byte{"user": []byte("admin"), "pass": []byte("old")},
			StringData: map[string]string{"pass": "s3cret"}},
	}
	return cms, secrets
}

func TestEnvOrderAndPrecedence(t *testing.T) {
	cms, secrets := objects()
	tests := []struct {
		name    string
		envFrom []corev1.EnvFromSource
		env     []corev1.EnvVar
		want    []*runtimeapi.KeyValue
	}{
		{
			name: "literal values in order",
			env:  []corev1.EnvVar{{Name: "Z", Value: "1"}, {Name: "A", Value: "2"}, {Name: "EMPTY"}},
			want: kvs("Z", "1", "A", "2", "EMPTY", ""),
		},
		{
			name: "envFrom first, keys sorted, invalid names skipped, prefix applied",
			envFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
				{Prefix: "S_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
			},
			env:  []corev1.EnvVar{{Name: "LAST", Value: "x"}},
			want: kvs("A_KEY", "a", "B_KEY", "b", "mode", "prod", "S_pass", "s3cret", "S_user", "admin", "LAST", "x"),
		},
		{
			name: "env overrides envFrom and keeps its position",
			envFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
			},
			env:  []corev1.EnvVar{{Name: "mode", Value: "dev"}, {Name: "NEW", Value: "n"}},
			want: kvs("A_KEY", "a", "B_KEY", "b", "mode", "dev", "NEW", "n"),
		},
		{
			name: "later env wins over earlier env",
			env:  []corev1.EnvVar{{Name: "X", Value: "1"}, {Name: "Y", Value: "y"}, {Name: "X", Value: "2"}},
			want: kvs("X", "2", "Y", "y"),
		},
		{
			name: "expansion against earlier variables only",
			envFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
			},
			env: []corev1.EnvVar{
				{Name: "URL", Value: "http://$(HOST):$(PORT)/$(mode)"},
				{Name: "HOST", Value: "h"},
				{Name: "PORT", Value: "80"},
				{Name: "URL2", Value: "http://$(HOST):$(PORT)"},
				{Name: "ESC", Value: "$$(HOST)"},
			},
			want: kvs("A_KEY", "a", "B_KEY", "b", "mode", "prod",
				"URL", "http://$(HOST):$(PORT)/prod", "HOST", "h", "PORT", "80", "URL2", "http://h:80", "ESC", "$(HOST)"),
		},
		{
			name: "optional missing sources set nothing",
			envFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Optional: ptr(true)}},
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Optional: ptr(true)}},
			},
			env: []corev1.EnvVar{
				{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "k", Optional: ptr(true)}}},
				{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "missing", Optional: ptr(true)}}},
				{Name: "C", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "missing", Optional: ptr(true)}}},
				{Name: "D", Value: "d"},
			},
			want: kvs("D", "d"),
		},
		{
			name: "key refs",
			env: []corev1.EnvVar{
				{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "mode"}}},
				{Name: "USER", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "user"}}},
				{Name: "PASS", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "pass"}}},
			},
			want: kvs("MODE", "prod", "USER", "admin", "PASS", "s3cret"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].EnvFrom = tt.envFrom
				p.Spec.Containers[0].Env = tt.env
			})
			cfg, err := ContainerConfig(testInput(pod, func(in *ContainerInput) {
				in.ConfigMaps, in.Secrets = cms, secrets
			}), Options{})
			checkErr(t, err, nil)
			if d := diffProto(tt.want, cfg.Envs); d != "" {
				t.Errorf("envs (-want +got):\n%s", d)
			}
		})
	}
}

func TestEnvMissingReferences(t *testing.T) {
	cms, secrets := objects()
	ref := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	tests := []struct {
		name    string
		envFrom []corev1.EnvFromSource
		env     []corev1.EnvVar
		msg     []string
	}{
		{
			name:    "configmap envFrom",
			envFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("nope")}}},
			msg:     []string{"envFrom[0]", "ConfigMap default/nope", `container "app"`},
		},
		{
			name:    "secret envFrom, optional false",
			envFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref("nope"), Optional: ptr(false)}}},
			msg:     []string{"secret default/nope"},
		},
		{
			name: "configmap of another namespace is not visible",
			env: []corev1.EnvVar{{Name: "M", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: ref("cfg"), Key: "absent"}}}},
			msg: []string{"env[0] (M)", `key "absent"`, "ConfigMap default/cfg"},
		},
		{
			name: "missing configmap for key ref",
			env: []corev1.EnvVar{{Name: "M", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: ref("gone"), Key: "k"}}}},
			msg: []string{"ConfigMap default/gone"},
		},
		{
			name: "missing secret key",
			env: []corev1.EnvVar{{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: ref("creds"), Key: "token"}}}},
			msg: []string{`key "token"`, "Secret default/creds"},
		},
		{
			name: "missing secret",
			env: []corev1.EnvVar{{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: ref("gone"), Key: "token"}}}},
			msg: []string{"secret default/gone"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].EnvFrom = tt.envFrom
				p.Spec.Containers[0].Env = tt.env
			})
			_, err := ContainerConfig(testInput(pod, func(in *ContainerInput) {
				in.ConfigMaps, in.Secrets = cms, secrets
			}), Options{})
			checkErr(t, err, errdefs.ErrNotFound, tt.msg...)
		})
	}
}

func TestDownwardAPI(t *testing.T) {
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	res := func(container, name, divisor string) *corev1.EnvVarSource {
		s := &corev1.ResourceFieldSelector{ContainerName: container, Resource: name}
		if divisor != "" {
			s.Divisor = resource.MustParse(divisor)
		}
		return &corev1.EnvVarSource{ResourceFieldRef: s}
	}
	opts := Options{NodeName: "opts-node", HostIPs: []string{"192.168.1.10", "fd00::10"}}
	tests := []struct {
		name   string
		src    *corev1.EnvVarSource
		mutate func(*corev1.Pod, *ContainerInput)
		opts   Options
		want   string
	}{
		{"name", field("metadata.name"), nil, opts, "web"},
		{"namespace", field("metadata.namespace"), nil, opts, "default"},
		{"uid", field("metadata.uid"), nil, opts, "1234-abcd"},
		{"label", field("metadata.labels['app']"), nil, opts, "web"},
		{"missing label", field("metadata.labels['nope']"), nil, opts, ""},
		{"annotation", field("metadata.annotations['note']"), nil, opts, "hi"},
		{"all labels", field("metadata.labels"), func(p *corev1.Pod, _ *ContainerInput) {
			p.Labels["tier"] = `"front"`
		}, opts, "app=\"web\"\ntier=\"\\\"front\\\"\""},
		{"node name from pod", field("spec.nodeName"), nil, opts, "node1"},
		{"node name from options", field("spec.nodeName"), func(p *corev1.Pod, _ *ContainerInput) { p.Spec.NodeName = "" }, opts, "opts-node"},
		{"service account", field("spec.serviceAccountName"), func(p *corev1.Pod, _ *ContainerInput) { p.Spec.ServiceAccountName = "sa" }, opts, "sa"},
		{"pod ip", field("status.podIP"), nil, opts, "10.88.0.5"},
		{"pod ips", field("status.podIPs"), nil, opts, "10.88.0.5,fd00::5"},
		{"pod ip without list", field("status.podIPs"), func(_ *corev1.Pod, in *ContainerInput) { in.PodIPs = nil }, opts, "10.88.0.5"},
		{"host network pod ip is the host's", field("status.podIP"), func(p *corev1.Pod, in *ContainerInput) {
			p.Spec.HostNetwork = true
			in.PodIP, in.PodIPs = "", nil
		}, opts, "192.168.1.10"},
		{"host ip", field("status.hostIP"), nil, opts, "192.168.1.10"},
		{"host ips", field("status.hostIPs"), nil, opts, "192.168.1.10,fd00::10"},
		{"host ip unknown", field("status.hostIP"), nil, Options{}, ""},
		{"cpu limit in cores rounds up", res("", "limits.cpu", ""), nil, opts, "2"},
		{"cpu limit in millicores", res("", "limits.cpu", "1m"), nil, opts, "1500"},
		{"memory limit in Mi", res("", "limits.memory", "1Mi"), nil, opts, "256"},
		{"memory limit in bytes", res("", "limits.memory", ""), nil, opts, "268435456"},
		{"cpu request", res("", "requests.cpu", "1m"), nil, opts, "250"},
		{"memory request defaults to limit", res("", "requests.memory", "1Mi"), nil, opts, "256"},
		{"ephemeral storage", res("", "limits.ephemeral-storage", "1Gi"), nil, opts, "2"},
		{"unset limit is 0 without node facts", res("other", "limits.cpu", ""), nil, opts, "0"},
		{"unset limit is node capacity", res("other", "limits.memory", "1Mi"), nil,
			Options{NodeMemoryBytes: 4 << 30, NodeMilliCPU: 2000}, "4096"},
		{"unset cpu limit is node capacity", res("other", "limits.cpu", ""), nil,
			Options{NodeMemoryBytes: 4 << 30, NodeMilliCPU: 2000}, "2"},
		{"other container", res("other", "requests.memory", "1Mi"), nil, opts, "64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
					Requests: rl("cpu", "250m"),
					Limits:   rl("cpu", "1500m", "memory", "256Mi", "ephemeral-storage", "1500Mi"),
				}
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
					Name: "other", Resources: corev1.ResourceRequirements{Requests: rl("memory", "64Mi")},
				})
				p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", ValueFrom: tt.src}}
			})
			in := testInput(pod)
			if tt.mutate != nil {
				tt.mutate(pod, &in)
			}
			cfg, err := ContainerConfig(in, tt.opts)
			checkErr(t, err, nil)
			if d := diffProto(kvs("V", tt.want), cfg.Envs); d != "" {
				t.Errorf("envs (-want +got):\n%s", d)
			}
		})
	}
}

func TestDownwardAPIErrors(t *testing.T) {
	tests := []struct {
		name  string
		src   *corev1.EnvVarSource
		class error
		msg   string
	}{
		{"unknown field", &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.hostname"}},
			errdefs.ErrInvalidArgument, "spec.hostname"},
		{"unknown resource", &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.gpu"}},
			errdefs.ErrInvalidArgument, "limits.gpu"},
		{"unknown container", &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "ghost", Resource: "limits.cpu"}},
			errdefs.ErrNotFound, "ghost"},
		{"empty source", &corev1.EnvVarSource{}, errdefs.ErrInvalidArgument, "env[0] (V)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(func(p *corev1.Pod) { p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", ValueFrom: tt.src}} })
			_, err := ContainerConfig(testInput(pod), Options{})
			checkErr(t, err, tt.class, tt.msg)
		})
	}
}
