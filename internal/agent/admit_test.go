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

func TestOnlyResized(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	base := func() *corev1.Pod {
		p := podWith("a", "500m", "64Mi", 0, "100m")
		p.Spec.Containers[0].Resources.Limits = p.Spec.Containers[0].Resources.Requests.DeepCopy()
		return p
	}
	tests := []struct {
		name string
		edit func(p *corev1.Pod)
		want bool
	}{
		{"same pod", func(*corev1.Pod) {}, true},
		{"app container's memory", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("128Mi")
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("128Mi")
		}, true},
		{"a regular init container's resources", func(p *corev1.Pod) {
			p.Spec.InitContainers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
		}, false},
		{"another field too", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("1")
			p.Spec.Containers[0].Image = "other"
		}, false},
		{"one more container", func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "d"}) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base()
			tt.edit(p)
			if got := onlyResized(base(), p); got != tt.want {
				t.Errorf("onlyResized = %t, want %t", got, tt.want)
			}
		})
	}
	t.Run("QoS class changes (Guaranteed to Burstable)", func(t *testing.T) {
		old := podWith("a", "500m", "64Mi", 0)
		old.Spec.Containers[0].Resources.Limits = old.Spec.Containers[0].Resources.Requests.DeepCopy()
		p := old.DeepCopy()
		p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("128Mi")
		if onlyResized(old, p) {
			t.Error("a change of QoS class counts as a resize")
		}
	})
	t.Run("a sidecar's resources", func(t *testing.T) {
		old := base()
		old.Spec.InitContainers[0].RestartPolicy = &always
		p := old.DeepCopy()
		p.Spec.InitContainers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
		if !onlyResized(old, p) {
			t.Error("a sidecar's resize is not a resize")
		}
	})
}

func TestResizeFits(t *testing.T) {
	const cpu, mem = 2000, 1 << 30
	others := []*corev1.Pod{podWith("b", "1", "512Mi", 0)}
	tests := []struct {
		name, cpu, mem  string
		reason, message string
	}{
		{"fits", "500m", "256Mi", "", ""},
		{"more memory than the node", "500m", "2Gi", corev1.PodReasonInfeasible, "Node didn't have enough capacity: memory, requested: 2147483648, capacity: 1073741824"},
		{"more cpu than the node", "3", "", corev1.PodReasonInfeasible, "cpu, requested: 3000, capacity: 2000"},
		{"not beside the others", "500m", "600Mi", corev1.PodReasonDeferred, "Node didn't have enough resource: memory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := resizeFits(podWith("a", tt.cpu, tt.mem, 0), others, cpu, mem)
			switch {
			case tt.reason == "" && r != nil:
				t.Fatalf("pending: %s: %s", r.Reason, r.Message)
			case tt.reason != "" && r == nil:
				t.Fatalf("fits, want %s", tt.reason)
			case r != nil && (r.Reason != tt.reason || !strings.Contains(r.Message, tt.message)):
				t.Errorf("= %s: %q, want %s containing %q", r.Reason, r.Message, tt.reason, tt.message)
			}
		})
	}
}
