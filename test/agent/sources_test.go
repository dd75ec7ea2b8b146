package agenttest

import (
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testInvalidManifest: a file with an unknown field is reported, naming
// the file and the field, and the pod of the file beside it runs.
func testInvalidManifest(t *testing.T, s *suite) {
	const name = "beside-bad"
	bad := `apiVersion: v1
kind: Pod
metadata:
  name: bad-pod
spec:
  containers:
  - name: app
    imagee: ` + s.env.image + `
`
	s.h.writeFile(t, "bad-pod.yaml", []byte(bad))
	defer s.h.removeFile(t, "bad-pod.yaml")
	s.h.writePod(t, podSpec(name, s.env.shell("app", sleepForever)))
	s.h.waitFor(t, name, "running", longWait, func(p *corev1.Pod) bool { return running(p, "app") })

	found := false
	for _, e := range s.h.Store().SourceErrors() {
		if filepath.Base(e.Path) == "bad-pod.yaml" {
			found = true
			if !strings.Contains(e.Message, "imagee") {
				t.Errorf("error of bad-pod.yaml does not name the field: %q", e.Message)
			}
		}
	}
	if !found {
		t.Errorf("source errors %v do not name bad-pod.yaml", s.h.Store().SourceErrors())
	}
	if _, ok := s.h.Store().Lookup("default", "bad-pod"); ok {
		t.Errorf("the invalid pod is in the store")
	}
}

// testConfigMapSecret: configMap and secret volumes and env from a
// ConfigMap, all from manifests in the same directory.
func testConfigMapSecret(t *testing.T, s *suite) {
	const name = "cm-secret"
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "cm-secret-config"},
		Data:       map[string]string{"greeting": "hello", "colour": "blue"},
	}
	sec := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "cm-secret-secret"},
		StringData: map[string]string{"password": "s3cret"},
	}
	app := s.env.shell("app", `echo "file=$(cat /cm/greeting)"; echo "secret=$(cat /sec/password)"; echo "env=$COLOUR"; `+sleepForever)
	app.VolumeMounts = []corev1.VolumeMount{{Name: "cm", MountPath: "/cm"}, {Name: "sec", MountPath: "/sec"}}
	app.Env = []corev1.EnvVar{{Name: "COLOUR", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}, Key: "colour"},
	}}}
	pod := podSpec(name, app)
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}},
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: sec.Name}}},
	}
	s.h.writeObjects(t, name+".yaml", cm, sec, pod)
	p := s.h.waitFor(t, name, "running", longWait, func(p *corev1.Pod) bool { return running(p, "app") })
	lines := waitLog(t, podLogDir(s.h.LogRoot, p)+"/app/0.log", "prints config", func(l []string) bool { return len(l) >= 3 })
	for _, want := range []string{"file=hello", "secret=s3cret", "env=blue"} {
		if !contains(lines, want) {
			t.Errorf("app log %q lacks %q", lines, want)
		}
	}
}
