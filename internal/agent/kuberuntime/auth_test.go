package kuberuntime

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestPullAuth(t *testing.T) {
	secret := func(name string, typ corev1.SecretType, key, data string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Type:       typ,
			Data:       map[string][]byte{key: []byte(data)},
		}
	}
	secrets := map[string]*corev1.Secret{
		"ns/hub": secret("hub", corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey,
			`{"auths":{"https://index.docker.io/v1/":{"auth":"dXNlcjpwYXNz"}}}`),
		"ns/private": secret("private", corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey,
			`{"auths":{"registry.example:5000":{"username":"u","password":"p"}}}`),
		"ns/old": secret("old", corev1.SecretTypeDockercfg, corev1.DockerConfigKey,
			`{"old.example":{"username":"o","password":"q"}}`),
		"ns/opaque": secret("opaque", corev1.SecretTypeOpaque, "x", `{}`),
		"other/private": secret("private", corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey,
			`{"auths":{"elsewhere.example":{"username":"x","password":"y"}}}`),
	}
	pod := func(ns string, names ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns}}
		for _, n := range names {
			p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: n})
		}
		return p
	}
	tests := []struct {
		name  string
		pod   *corev1.Pod
		image string
		want  *runtimeapi.AuthConfig
	}{
		{"no pull secrets", pod("ns"), "busybox", nil},
		{"docker hub short name, auth field", pod("ns", "missing", "opaque", "hub"), "busybox:1.36",
			&runtimeapi.AuthConfig{Username: "user", Password: "pass", Auth: "dXNlcjpwYXNz", ServerAddress: "index.docker.io"}},
		{"registry with port", pod("ns", "hub", "private"), "registry.example:5000/team/app@sha256:" + sixtyFour,
			&runtimeapi.AuthConfig{Username: "u", Password: "p", ServerAddress: "registry.example:5000"}},
		{"legacy dockercfg", pod("ns", "old"), "old.example/app",
			&runtimeapi.AuthConfig{Username: "o", Password: "q", ServerAddress: "old.example"}},
		{"no secret for the registry", pod("ns", "hub", "private"), "quay.io/app", nil},
		{"secrets of another namespace are not used", pod("ns", "private"), "elsewhere.example/app", nil},
		{"bad reference", pod("ns", "hub"), "UPPER/Case", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pullAuth(tt.pod, tt.image, secrets)
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("pullAuth (-want +got):\n%s", diff)
			}
		})
	}
}

const sixtyFour = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
