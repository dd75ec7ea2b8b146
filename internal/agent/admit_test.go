package agent

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func podWith(name, cpu, mem string, hostPort int32, init ...string) *corev1.Pod {
	req := corev1.ResourceList{}
	if cpu != "" {
		req[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		req[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	c := corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: req}}
	if hostPort != 0 {
		c.Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: hostPort, Protocol: corev1.ProtocolTCP}}
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	p.Spec.Containers = []corev1.Container{c}
	for _, ic := range init {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "i",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(ic)}}})
	}
	return p
}

func TestFits(t *testing.T) {
	const cpu, mem = 2000, 1 << 30
	tests := []struct {
		name     string
		pod      *corev1.Pod
		admitted []*corev1.Pod
		reason   string // "" when admitted
		message  string // a part of the message
	}{
		{"best effort always fits", podWith("a", "", "", 0), []*corev1.Pod{podWith("b", "2", "1Gi", 0)}, "", ""},
		{"fits beside others", podWith("a", "1", "512Mi", 0), []*corev1.Pod{podWith("b", "1", "512Mi", 0)}, "", ""},
		{"too much cpu", podWith("a", "1500m", "", 0), []*corev1.Pod{podWith("b", "1", "", 0)}, "OutOfcpu", "cpu, requested: 1500, used: 1000, capacity: 2000"},
		{"too much memory", podWith("a", "", "600Mi", 0), []*corev1.Pod{podWith("b", "", "500Mi", 0)}, "OutOfmemory", "memory, requested: 629145600"},
		{"an init container's request counts when it is the largest", podWith("a", "100m", "", 0, "3"), nil, "OutOfcpu", "requested: 3000"},
		{"host port taken", podWith("a", "", "", 8080), []*corev1.Pod{podWith("b", "", "", 8080)}, "NodePorts", "TCP/0.0.0.0:8080 is already used by pod default/b"},
		{"other host port free", podWith("a", "", "", 8081), []*corev1.Pod{podWith("b", "", "", 8080)}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fits(tt.pod, tt.admitted, cpu, mem)
			switch {
			case tt.reason == "" && r != nil:
				t.Fatalf("rejected: %s: %s", r.Reason, r.Message)
			case tt.reason != "" && r == nil:
				t.Fatalf("admitted, want %s", tt.reason)
			case r != nil && (r.Reason != tt.reason || !strings.Contains(r.Message, tt.message)):
				t.Errorf("rejection = %s: %q, want %s containing %q", r.Reason, r.Message, tt.reason, tt.message)
			}
		})
	}
	if r := fits(podWith("a", "64", "1Ti", 0), nil, 0, 0); r != nil {
		t.Errorf("unknown capacity rejected a pod: %v", r)
	}
}
