package podconfig

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
)

func ptr[T any](v T) *T { return &v }

// testPod is a minimal defaulted pod with one app container "app".
func testPod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "default", UID: "1234-abcd",
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"note": "hi"},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "app", Image: "busybox:1.36",
				TerminationMessagePath: "/dev/termination-log",
			}},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			DNSPolicy:                     corev1.DNSClusterFirst,
			TerminationGracePeriodSeconds: ptr(int64(30)),
			SecurityContext:               &corev1.PodSecurityContext{},
			NodeName:                      "node1",
		},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// testInput is the input for the pod's first app container.
func testInput(pod *corev1.Pod, mutate ...func(*ContainerInput)) ContainerInput {
	in := ContainerInput{
		Pod:          pod,
		Container:    &pod.Spec.Containers[0],
		Type:         labels.TypeApp,
		RestartCount: 2,
		Hash:         "h1",
		PodIP:        "10.88.0.5",
		PodIPs:       []string{"10.88.0.5", "fd00::5"},
		Image:        "sha256:abc",
		ImageUser:    &ImageUser{UID: ptr(int64(1000))},
	}
	for _, m := range mutate {
		m(&in)
	}
	return in
}

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// resources sets requests and limits, each a "cpu,memory" pair ("" skips).
func resources(req, lim []string) corev1.ResourceRequirements {
	pair := func(v []string) corev1.ResourceList {
		if v == nil {
			return nil
		}
		out := corev1.ResourceList{}
		if v[0] != "" {
			out[corev1.ResourceCPU] = resource.MustParse(v[0])
		}
		if v[1] != "" {
			out[corev1.ResourceMemory] = resource.MustParse(v[1])
		}
		return out
	}
	return corev1.ResourceRequirements{Requests: pair(req), Limits: pair(lim)}
}

func diffProto(want, got any) string { return cmp.Diff(want, got, protocmp.Transform()) }

// checkErr asserts err is nil when class is nil, else of that class and
// mentioning every word in msg.
func checkErr(t *testing.T, err, class error, msg ...string) {
	t.Helper()
	if class == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want %v", class)
	}
	if !errors.Is(err, class) {
		t.Fatalf("error %q is not %v", err, class)
	}
	for _, m := range msg {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not mention %q", err, m)
		}
	}
}
