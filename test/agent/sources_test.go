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

	// Deleting the file removes the pod and its data together: the pod
	// never runs, even briefly, without its ConfigMap and Secret.
	s.h.removeFile(t, name+".yaml")
	s.h.waitFor(t, name, "gone", longWait, func(p *corev1.Pod) bool { return p == nil })
	for _, ev := range s.h.Agent().Events().List().Items {
		if ev.InvolvedObject.Name == name && ev.Type == corev1.EventTypeWarning {
			t.Errorf("warning event while the pod's file was deleted: %s: %s", ev.Reason, ev.Message)
		}
	}
}

// testRejectedEditKeepsData: a file holding a ConfigMap and a pod that
// uses it is edited into an invalid one. The pod keeps running as it was
// (the last good version is kept), and so must the ConfigMap it needs: the
// container restarts (it exits every second) keep finding it.
func testRejectedEditKeepsData(t *testing.T, s *suite) {
	const name = "rejected-edit"
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "rejected-edit-config"},
		Data:       map[string]string{"colour": "green"},
	}
	app := s.env.shell("app", `echo "env=$COLOUR"; sleep 1`)
	app.Env = []corev1.EnvVar{{Name: "COLOUR", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}, Key: "colour"},
	}}}
	s.h.writeObjects(t, name+".yaml", cm, podSpec(name, app))
	p := s.h.waitFor(t, name, "restarted once", longWait, func(p *corev1.Pod) bool { return restarts(p, "app") >= 1 })
	before := restarts(p, "app")

	bad := `apiVersion: v1
kind: ConfigMap
metadata:
  name: rejected-edit-config
data:
  colour: green
---
apiVersion: v1
kind: Pod
metadata:
  name: rejected-edit
spec:
  containerz: []
`
	s.h.writeFile(t, name+".yaml", []byte(bad))
	var reasons transitions
	p = s.h.waitFor(t, name, "restarted twice more after the rejected edit", longWait, func(p *corev1.Pod) bool {
		reasons.see(waitingReason(p, "app"))
		return restarts(p, "app") >= before+2 || waitingReason(p, "app") == "CreateContainerConfigError"
	})
	if reasons.has("CreateContainerConfigError") {
		st := containerStatus(p, "app")
		t.Errorf("after the rejected edit the kept pod lost its ConfigMap: %s: %s", st.State.Waiting.Reason, st.State.Waiting.Message)
	}
	found := false
	for _, e := range s.h.Store().SourceErrors() {
		found = found || filepath.Base(e.Path) == name+".yaml"
	}
	if !found {
		t.Errorf("source errors %v do not name %s.yaml", s.h.Store().SourceErrors(), name)
	}
}
