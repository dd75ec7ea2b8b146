package source

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestDefaultPod(t *testing.T) {
	const manifest = `apiVersion: v1
kind: Pod
metadata:
  name: web
  uid: copied-from-a-cluster
spec:
  initContainers:
  - name: init
    image: busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000
  containers:
  - name: app
    image: registry.local:5000/web:1.2
    ports:
    - containerPort: 80
    env:
    - name: POD
      valueFrom:
        fieldRef: {fieldPath: metadata.name}
    resources:
      limits: {cpu: 500m}
      requests: {memory: 64Mi}
    livenessProbe:
      httpGet: {port: 80}
    readinessProbe:
      tcpSocket: {port: 80}
      periodSeconds: 3
    lifecycle:
      preStop:
        httpGet: {port: 80, path: /quit}
    volumeMounts:
    - {name: data, mountPath: /data}
    - {name: host, mountPath: /host}
    - {name: cfg, mountPath: /cfg}
    - {name: sec, mountPath: /sec}
    - {name: plain, mountPath: /plain}
    - {name: tools, mountPath: /tools, subPath: bin}
    - {name: latest, mountPath: /latest}
  - name: side
    image: busybox:latest
    imagePullPolicy: Never
    terminationMessagePolicy: FallbackToLogsOnError
  volumes:
  - name: data
    emptyDir: {}
  - name: host
    hostPath: {path: /srv}
  - name: cfg
    configMap: {name: cfg}
  - name: sec
    secret: {secretName: sec, defaultMode: 0400}
  - name: plain
  - name: tools
    image: {reference: registry.local:5000/tools:1.0}
  - name: latest
    image: {reference: registry.local:5000/tools}
status:
  phase: Running
  podIP: 10.0.0.9
`
	dir := t.TempDir()
	path := writeFile(t, dir, "web.yaml", manifest)
	snap := Load(dir, Options{NodeName: "node1"})
	if len(snap.Errors) > 0 || len(snap.Pods) != 1 {
		t.Fatalf("pods %v errors %v", podNames(snap), errorMessages(snap))
	}
	got := snap.Pods[0]
	uid := PodUID(path, "default", "web", "node1")
	want := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      "web",
			Namespace: "default",
			UID:       uid,
			Annotations: map[string]string{
				AnnotationConfigSource: "file",
				AnnotationConfigHash:   string(uid),
				AnnotationConfigFile:   path,
			},
		},
		Spec: corev1.PodSpec{
			NodeName:                      "node1",
			RestartPolicy:                 corev1.RestartPolicyAlways,
			DNSPolicy:                     corev1.DNSClusterFirst,
			TerminationGracePeriodSeconds: ptr(int64(30)),
			InitContainers: []corev1.Container{{
				Name:                     "init",
				Image:                    "busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000",
				ImagePullPolicy:          corev1.PullIfNotPresent,
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.local:5000/web:1.2",
				Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
				Env: []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}},
				Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
					Requests: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("500m"),
						corev1.ResourceMemory: resource.MustParse("64Mi"),
					},
				},
				LivenessProbe: &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
						Path: "/", Port: intstr.FromInt32(80), Scheme: corev1.URISchemeHTTP}},
					TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
				},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:   corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}},
					TimeoutSeconds: 1, PeriodSeconds: 3, SuccessThreshold: 1, FailureThreshold: 3,
				},
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{
					Path: "/quit", Port: intstr.FromInt32(80), Scheme: corev1.URISchemeHTTP}}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "data", MountPath: "/data"}, {Name: "host", MountPath: "/host"},
					{Name: "cfg", MountPath: "/cfg"}, {Name: "sec", MountPath: "/sec"},
					{Name: "plain", MountPath: "/plain"},
					{Name: "tools", MountPath: "/tools", SubPath: "bin"}, {Name: "latest", MountPath: "/latest"},
				},
				ImagePullPolicy:          corev1.PullIfNotPresent,
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}, {
				Name:                     "side",
				Image:                    "busybox:latest",
				ImagePullPolicy:          corev1.PullNever,
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: "/srv", Type: ptr(corev1.HostPathUnset)}}},
				{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, DefaultMode: ptr(int32(0o644))}}},
				{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: "sec", DefaultMode: ptr(int32(0o400))}}},
				{Name: "plain", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "tools", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{
					Reference: "registry.local:5000/tools:1.0", PullPolicy: corev1.PullIfNotPresent}}},
				{Name: "latest", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{
					Reference: "registry.local:5000/tools", PullPolicy: corev1.PullAlways}}},
			},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaulted pod (-want +got):\n%s", diff)
	}
}

func TestDefaultPodHostNetworkPorts(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		HostNetwork: true,
		Containers: []corev1.Container{{Name: "a", Image: "x", Ports: []corev1.ContainerPort{
			{ContainerPort: 8080}, {ContainerPort: 53, HostPort: 53, Protocol: corev1.ProtocolUDP}}}},
	}}
	defaultPod(pod, "")
	want := []corev1.ContainerPort{
		{ContainerPort: 8080, HostPort: 8080, Protocol: corev1.ProtocolTCP},
		{ContainerPort: 53, HostPort: 53, Protocol: corev1.ProtocolUDP},
	}
	if diff := cmp.Diff(want, pod.Spec.Containers[0].Ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
	if pod.Spec.NodeName != "" || pod.Namespace != "default" {
		t.Errorf("node %q namespace %q", pod.Spec.NodeName, pod.Namespace)
	}
}

func TestPullPolicy(t *testing.T) {
	tests := []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"nginx", corev1.PullAlways},
		{"nginx:latest", corev1.PullAlways},
		{"nginx:1.27", corev1.PullIfNotPresent},
		{"docker.io/library/nginx", corev1.PullAlways},
		{"localhost:5000/nginx", corev1.PullAlways},
		{"localhost:5000/nginx:latest", corev1.PullAlways},
		{"localhost:5000/nginx:v2", corev1.PullIfNotPresent},
		{"nginx@sha256:abcd", corev1.PullIfNotPresent},
		{"nginx:latest@sha256:abcd", corev1.PullIfNotPresent},
	}
	for _, tt := range tests {
		if got := pullPolicy(tt.image); got != tt.want {
			t.Errorf("pullPolicy(%q) = %s, want %s", tt.image, got, tt.want)
		}
	}
}

func TestDefaultSecretAndConfigMap(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "objs.yaml", `apiVersion: v1
kind: Secret
metadata: {name: s}
data:
  a: YWFh
  b: YmJi
stringData:
  b: override
  c: plain
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: apps}
data: {k: v}
binaryData: {bin: AAE=}
`)
	snap := Load(dir, Options{})
	if len(snap.Errors) > 0 {
		t.Fatal(errorMessages(snap))
	}
	fileAnnotation := map[string]string{AnnotationConfigFile: absPath(dir) + "/objs.yaml"}
	wantSecret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default", Annotations: fileAnnotation},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"a": []byte("aaa"), "b": []byte("override"), "c": []byte("plain")},
	}
	if diff := cmp.Diff(wantSecret, snap.Secrets["default/s"]); diff != "" {
		t.Errorf("secret (-want +got):\n%s", diff)
	}
	wantCM := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "apps", Annotations: fileAnnotation},
		Data:       map[string]string{"k": "v"},
		BinaryData: map[string][]byte{"bin": {0, 1}},
	}
	if diff := cmp.Diff(wantCM, snap.ConfigMaps["apps/c"]); diff != "" {
		t.Errorf("configmap (-want +got):\n%s", diff)
	}
}
