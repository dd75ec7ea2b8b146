package kuberuntime

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/plan"
)

// fakeCgroups records EnsurePod in the call log, for the order of a
// resize's steps.
type fakeCgroups struct{ log *callLog }

func (c fakeCgroups) EnsurePod(pod *corev1.Pod) (string, error) {
	c.log.add("Cgroups.EnsurePod:%d", pod.Spec.Containers[0].Resources.Limits.Memory().Value())
	return "", nil
}

func (c fakeCgroups) RemovePod(string) error { return nil }

// sized gives container "app" equal requests and limits and a memory
// resize policy.
func sized(cpu, mem string, memPolicy corev1.ResourceResizeRestartPolicy) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: l, Limits: l}
		p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{
			{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
			{ResourceName: corev1.ResourceMemory, RestartPolicy: memPolicy},
		}
	}
}

func newResizeEnv(t *testing.T) *env {
	e := newEnv(t, func(c *Config) { c.Cgroups = fakeCgroups{log: c.Volumes.(*fakeVolumes).log} })
	return e
}

const mib = 1 << 20

func TestResizeInPlace(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		wantOrder      []string // prefixes of the resize's calls, in order; {id} and {sandbox} are the pod's
	}{
		{"memory grows: pod cgroup first", "64Mi", "128Mi", []string{
			fmt.Sprintf("Cgroups.EnsurePod:%d", 128*mib), "UpdateContainerResources:{id}:" + fmt.Sprint(128*mib), "UpdatePodSandboxResources:{sandbox}:",
		}},
		{"memory shrinks: containers first", "128Mi", "64Mi", []string{
			"UpdateContainerResources:{id}:" + fmt.Sprint(64*mib), fmt.Sprintf("Cgroups.EnsurePod:%d", 64*mib), "UpdatePodSandboxResources:{sandbox}:",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newResizeEnv(t)
			pod := testPod(sized("500m", tc.from, corev1.NotRequired))
			e.mustSync(pod)
			if e.rt.lastCreated().Annotations[labels.ContainerResizeHash] == "" {
				t.Fatal("container created without the resize hash")
			}
			before := e.running(pod, "app")

			mark := e.log.len()
			resized := testPod(sized("500m", tc.to, corev1.NotRequired))
			res := e.mustSync(resized)
			calls := e.log.since(mark)
			if len(res.Actions.ContainersToResize) != 1 || !slices.Equal(res.Resized, []string{before.ID}) {
				t.Fatalf("resize planned %+v, done %v; want %s", res.Actions.ContainersToResize, res.Resized, before.ID)
			}
			for _, bad := range []string{"StopContainer", "CreateContainer", "StopPodSandbox", "RunPodSandbox"} {
				if got := withPrefix(calls, bad); len(got) > 0 {
					t.Errorf("a resize in place called %v", got)
				}
			}
			last := -1
			for _, w := range tc.wantOrder {
				w = strings.NewReplacer("{id}", before.ID, "{sandbox}", before.SandboxID).Replace(w)
				i := indexOfPrefix(calls, w)
				if i < 0 || i < last {
					t.Fatalf("call %q missing or out of order in %v", w, calls)
				}
				last = i
			}

			after := e.running(resized, "app")
			if after.ID != before.ID || after.Attempt != 0 {
				t.Errorf("container replaced: %s attempt %d, was %s", after.ID, after.Attempt, before.ID)
			}
			if after.Resources == nil || after.Resources.MemoryLimit != ptr(resource.MustParse(tc.to)).Value() {
				t.Errorf("observed resources %+v, want memory limit %s", after.Resources, tc.to)
			}

			// Done: the next sync finds nothing to resize.
			mark = e.log.len()
			e.mustSync(resized)
			if got := withPrefix(e.log.since(mark), "UpdateContainerResources"); len(got) > 0 {
				t.Errorf("resized again: %v", got)
			}
		})
	}
}

// indexOfPrefix is the first call that starts with prefix, or -1.
func indexOfPrefix(calls []string, prefix string) int {
	for i, c := range calls {
		if strings.HasPrefix(c, prefix) {
			return i
		}
	}
	return -1
}

func TestResizeRestartContainerPolicy(t *testing.T) {
	e := newResizeEnv(t)
	pod := testPod(sized("500m", "64Mi", corev1.RestartContainer))
	e.mustSync(pod)
	before := e.running(pod, "app")

	mark := e.log.len()
	res := e.mustSync(testPod(sized("500m", "128Mi", corev1.RestartContainer)))
	calls := e.log.since(mark)
	if got := withPrefix(calls, "UpdateContainerResources"); len(got) > 0 {
		t.Errorf("RestartContainer resized in place: %v", got)
	}
	if indexOf(calls, "StopContainer:"+before.ID) < 0 || indexOf(calls, "CreateContainer:app:1") < 0 {
		t.Errorf("want the container stopped and created again, calls %v", calls)
	}
	if len(res.Actions.ContainersToKill) != 1 || res.Actions.ContainersToKill[0].Reason != plan.ReasonResizeRestart {
		t.Errorf("kills %+v, want one for %q", res.Actions.ContainersToKill, plan.ReasonResizeRestart)
	}
	if got := withPrefix(calls, "RunPodSandbox"); len(got) > 0 {
		t.Errorf("a resize recreated the sandbox: %v", got)
	}
}

// A resize the runtime refuses is reported, the container is kept, and
// the next sync tries again.
func TestResizeFailureIsRetried(t *testing.T) {
	e := newResizeEnv(t)
	e.mustSync(testPod(sized("500m", "128Mi", corev1.NotRequired)))
	before := e.running(testPod(), "app")

	smaller := testPod(sized("500m", "64Mi", corev1.NotRequired))
	e.rt.InjectError("UpdateContainerResources", fmt.Errorf("memory in use above the new limit"))
	mark := e.log.len()
	res := e.sync(smaller)
	if res.Err == nil || !strings.Contains(res.ResizeError, "memory in use") || len(res.Resized) > 0 {
		t.Fatalf("failed resize: err %v, ResizeError %q, resized %v", res.Err, res.ResizeError, res.Resized)
	}
	if got := withPrefix(e.log.since(mark), "StopContainer"); len(got) > 0 {
		t.Errorf("a failed resize stopped the container: %v", got)
	}

	res = e.mustSync(smaller)
	if !slices.Equal(res.Resized, []string{before.ID}) || res.ResizeError != "" {
		t.Errorf("retry resized %v (error %q), want %s", res.Resized, res.ResizeError, before.ID)
	}
}
