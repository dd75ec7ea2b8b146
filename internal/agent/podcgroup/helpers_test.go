package podcgroup

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

// res builds requirements from "cpu,memory" strings; "" leaves a
// resource out, a nil string leaves the whole list out.
func res(requests, limits string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: list(requests), Limits: list(limits)}
}

func list(s string) corev1.ResourceList {
	if s == "" {
		return nil
	}
	cpu, mem, _ := strings.Cut(s, ",")
	out := corev1.ResourceList{}
	if cpu != "" {
		out[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		out[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return out
}

// pod is a pod with one app container per requirements.
func pod(uid string, containers ...corev1.ResourceRequirements) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: types.UID(uid)}}
	for i, r := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c" + string(rune('0'+i)), Image: "busybox", Resources: r})
	}
	return p
}

func readKnob(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read knob: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// touch creates files (with their directories) under dir.
func touch(t *testing.T, dir string, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// alive reports whether pid runs: it exists and is no zombie waiting for
// a parent (not this test) to reap it.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}
