package source

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func validPod() *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
			Containers: []corev1.Container{{
				Name:         "app",
				Image:        "nginx",
				Ports:        []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}},
			}},
			Volumes: []corev1.Volume{{Name: "data"}},
		},
	}
	defaultPod(pod, "node")
	return pod
}

func TestValidatePod(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []string // the field errors, in order
	}{
		{"valid", func(*corev1.Pod) {}, nil},
		{"missing name", func(p *corev1.Pod) { p.Name = "" }, []string{"metadata.name: required value"}},
		{"name not a subdomain", func(p *corev1.Pod) { p.Name = "Web_1" }, []string{`metadata.name: invalid value "Web_1": a lowercase RFC 1123 subdomain`}},
		{"dotted name is fine", func(p *corev1.Pod) { p.Name = "web.example" }, nil},
		{"host users false", func(p *corev1.Pod) { p.Spec.HostUsers = ptr(false) }, nil},
		{"host namespaces with host users", func(p *corev1.Pod) {
			p.Spec.HostUsers, p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = ptr(true), true, true, true
		}, nil},
		{"host namespaces without host users", func(p *corev1.Pod) {
			p.Spec.HostUsers, p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = ptr(false), true, true, true
		}, []string{"spec.hostNetwork: forbidden: when `spec.hostUsers` is false", "spec.hostPID: forbidden", "spec.hostIPC: forbidden"}},
		{"procMount Unmasked without host users", func(p *corev1.Pod) {
			p.Spec.HostUsers = ptr(false)
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ProcMount: ptr(corev1.UnmaskedProcMount)}
		}, nil},
		{"procMount Unmasked with host users", func(p *corev1.Pod) {
			p.Spec.InitContainers[0].SecurityContext = &corev1.SecurityContext{ProcMount: ptr(corev1.UnmaskedProcMount)}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ProcMount: ptr(corev1.DefaultProcMount)}
		}, []string{"spec.initContainers[0].securityContext.procMount: invalid value \"Unmasked\": `hostUsers` must be false to use `Unmasked`"}},
		{"procMount unknown", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ProcMount: ptr(corev1.ProcMountType("Masked"))}
		}, []string{`spec.containers[0].securityContext.procMount: unsupported value "Masked"`}},
		{"namespace not a label", func(p *corev1.Pod) { p.Namespace = "Kube_System" }, []string{`metadata.namespace: invalid value "Kube_System": a lowercase RFC 1123 label`}},
		{"no containers", func(p *corev1.Pod) { p.Spec.Containers = nil }, []string{"spec.containers: required value"}},
		{"container name not a label", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "App" }, []string{`spec.containers[0].name: invalid value "App"`}},
		{"container name missing", func(p *corev1.Pod) { p.Spec.InitContainers[0].Name = "" }, []string{"spec.initContainers[0].name: required value"}},
		{"container name used by an init container", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "init" }, []string{`spec.containers[0].name: duplicate value "init"`}},
		{"image missing", func(p *corev1.Pod) { p.Spec.Containers[0].Image = " " }, []string{"spec.containers[0].image: required value"}},
		{"container port zero", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 0 }, []string{"spec.containers[0].ports[0].containerPort: invalid value 0: must be between 1 and 65535"}},
		{"container port too big", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 65536 }, []string{"spec.containers[0].ports[0].containerPort: invalid value 65536"}},
		{"host port negative", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].HostPort = -1 }, []string{"spec.containers[0].ports[0].hostPort: invalid value -1: must be between 0 and 65535"}},
		{"protocol", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].Protocol = "ICMP" }, []string{`spec.containers[0].ports[0].protocol: unsupported value "ICMP"`}},
		{"duplicate volume", func(p *corev1.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, p.Spec.Volumes[0]) }, []string{`spec.volumes[1].name: duplicate value "data"`}},
		{"volume name missing", func(p *corev1.Pod) { p.Spec.Volumes[0].Name = "" }, []string{"spec.volumes[0].name: required value", `spec.containers[0].volumeMounts[0].name: not found "data"`}},
		{"mount of an undeclared volume", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].Name = "logs" }, []string{`spec.containers[0].volumeMounts[0].name: not found "logs"`}},
		{"mount path missing", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].MountPath = "" }, []string{"spec.containers[0].volumeMounts[0].mountPath: required value"}},
		{"hostPath without path", func(p *corev1.Pod) {
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{}}
		}, []string{"spec.volumes[0].hostPath.path: required value"}},
		{"image volume without reference", func(p *corev1.Pod) {
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{Image: &corev1.ImageVolumeSource{}}
		}, []string{"spec.volumes[0].image.reference: required value"}},
		{"image volume", func(p *corev1.Pod) {
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox"}}
		}, nil},
		{"probe without handler", func(p *corev1.Pod) { p.Spec.Containers[0].LivenessProbe.TCPSocket = nil }, []string{"spec.containers[0].livenessProbe: must specify a handler type"}},
		{"probe with two handlers", func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe.Exec = &corev1.ExecAction{Command: []string{"true"}}
		}, []string{"spec.containers[0].livenessProbe: may not specify more than 1 handler type"}},
		{"hook without handler", func(p *corev1.Pod) {
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{}}
		}, []string{"spec.containers[0].lifecycle.preStop: must specify a handler type"}},
		{"restart policy", func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, []string{`spec.restartPolicy: unsupported value "Sometimes"`}},
		{"negative grace period", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(-1)) }, []string{"spec.terminationGracePeriodSeconds: invalid value -1"}},
		{"several problems at once", func(p *corev1.Pod) {
			p.Spec.Containers[0].Image = ""
			p.Spec.InitContainers[0].Image = ""
		}, []string{"spec.initContainers[0].image: required value", "spec.containers[0].image: required value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := validPod()
			tt.mutate(pod)
			errs := validatePod(pod)
			if len(errs) != len(tt.want) {
				t.Fatalf("got %d errors %v, want %d %v", len(errs), errs, len(tt.want), tt.want)
			}
			for i, err := range errs {
				if !strings.HasPrefix(err.Error(), tt.want[i]) {
					t.Errorf("error %d: %q does not start with %q", i, err, tt.want[i])
				}
			}
		})
	}
}

func TestValidateConfigMapAndSecret(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"},
		Data:       map[string]string{"ok.key": "v", "bad/key": "v", "both": "v"},
		BinaryData: map[string][]byte{"both": nil}}
	want := []string{`data[bad/key]: invalid value "bad/key"`, `binaryData[both]: duplicate value "both"`}
	if diff := cmp.Diff(want, prefixes(validateConfigMap(cm), want)); diff != "" {
		t.Errorf("configmap errors (-want +got):\n%s", diff)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}, Data: map[string][]byte{"..": nil}}
	want = []string{"metadata.name: required value", `data[..]: invalid value ".."`}
	if diff := cmp.Diff(want, prefixes(validateSecret(sec), want)); diff != "" {
		t.Errorf("secret errors (-want +got):\n%s", diff)
	}
}

// prefixes cuts each error message to the length of the wanted one, so
// that cmp shows which differ without the validation library's prose.
func prefixes(errs []error, want []string) []string {
	var got []string
	for i, err := range errs {
		msg := err.Error()
		if i < len(want) && len(msg) > len(want[i]) {
			msg = msg[:len(want[i])]
		}
		got = append(got, msg)
	}
	return got
}
