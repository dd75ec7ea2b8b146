package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/crib-dev/crib/internal/agent/source"
)

// resizingRuntime is the fake runtime reporting the resources each
// container runs with, as a real runtime does (the fake drops them).
type resizingRuntime struct{ *critest.FakeRuntimeService }

func (r resizingRuntime) CreateContainer(ctx context.Context, sb string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	id, err := r.FakeRuntimeService.CreateContainer(ctx, sb, cfg, sbCfg)
	if err == nil {
		r.Lock()
		r.Containers[id].Resources = &runtimeapi.ContainerResources{Linux: cfg.GetLinux().GetResources()}
		r.Unlock()
	}
	return id, err
}

func (r resizingRuntime) UpdateContainerResources(ctx context.Context, id string, res *runtimeapi.ContainerResources) error {
	if err := r.FakeRuntimeService.UpdateContainerResources(ctx, id, res); err != nil {
		return err
	}
	r.Lock()
	defer r.Unlock()
	if c, ok := r.Containers[id]; ok {
		c.Resources = res
	}
	return nil
}

// resizablePods: "web" may have its memory resized in place; "db" takes
// half of the node's memory.
const resizablePods = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
    resizePolicy:
    - {resourceName: memory, restartPolicy: NotRequired}
    resources:
      requests: {cpu: 500m, memory: 64Mi}
      limits: {cpu: 500m, memory: 64Mi}
---
apiVersion: v1
kind: Pod
metadata:
  name: db
spec:
  containers:
  - name: db
    image: busybox:1.36
    command: [sleep, "3600"]
    resources:
      requests: {memory: 512Mi}
`

// withMemory is pod with its first container's memory request and limit
// set to mem.
func withMemory(pod *corev1.Pod, mem string) *corev1.Pod {
	out := pod.DeepCopy()
	q := resource.MustParse(mem)
	out.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = q
	out.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = q
	return out
}

func podCondition(r *runningAgent, pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	st, ok := r.a.Store().Get(pod.UID)
	if !ok {
		return nil
	}
	for i := range st.Status.Conditions {
		if st.Status.Conditions[i].Type == t {
			return &st.Status.Conditions[i]
		}
	}
	return nil
}

func TestAgentResizesInPlace(t *testing.T) {
	f := newRuntimeFakes(t)
	r := f.startConfigured(t, resizingRuntime{f.rt}, func(c *Config) {
		c.PodConfig.NodeMilliCPU, c.PodConfig.NodeMemoryBytes = 2000, 1<<30
	})
	snap := loadPods(t, resizablePods)
	web, db := podNamed(t, snap, "web"), podNamed(t, snap, "db")
	r.send(t, snap)
	r.waitRunning(t, f, web)
	r.waitRunning(t, f, db)
	before, _ := containerStatus(r, web, "app")

	// edit sends web as changed by edit (with db unless dropDB) and
	// returns the new version and the mutating calls it caused.
	edit := func(mem string, dropDB bool, until func(p *corev1.Pod) bool) (*corev1.Pod, []string) {
		t.Helper()
		p := withMemory(web, mem)
		next := snap
		next.Pods = []*corev1.Pod{p}
		if !dropDB {
			next.Pods = append(next.Pods, db)
		}
		mark := f.mark()
		r.send(t, next)
		waitFor(t, "web resized to "+mem, func() bool { return until(p) }, func() string {
			st, _ := r.a.Store().Get(p.UID)
			return fmt.Sprintf("%+v", st.Status)
		})
		r.idle(t, p)
		return p, mutatingCalls(f.callsSince(mark))
	}
	memoryIs := func(p *corev1.Pod, limit, allocated string) bool {
		c, ok := containerStatus(r, p, "app")
		return ok && c.Resources != nil && c.Resources.Limits.Memory().Equal(resource.MustParse(limit)) &&
			c.AllocatedResources.Memory().Equal(resource.MustParse(allocated))
	}
	pending := func(reason string) func(p *corev1.Pod) bool {
		return func(p *corev1.Pod) bool {
			c := podCondition(r, p, corev1.PodResizePending)
			return c != nil && c.Reason == reason && memoryIs(p, "128Mi", "128Mi")
		}
	}

	// Grows in place: one UpdateContainerResources, same container.
	p, calls := edit("128Mi", false, func(p *corev1.Pod) bool { return memoryIs(p, "128Mi", "128Mi") })
	if !equalStrings(calls, []string{"UpdateContainerResources"}) {
		t.Errorf("calls for a resize = %v, want only UpdateContainerResources", calls)
	}
	after, _ := containerStatus(r, p, "app")
	if after.ContainerID != before.ContainerID || after.RestartCount != 0 {
		t.Errorf("container %s restarts %d after the resize, want %s with 0", after.ContainerID, after.RestartCount, before.ContainerID)
	}
	for _, c := range []corev1.PodConditionType{corev1.PodResizePending, corev1.PodResizeInProgress} {
		if got := podCondition(r, p, c); got != nil {
			t.Errorf("after a done resize: %+v", got)
		}
	}

	// More than the node has: Infeasible, nothing applied.
	p, calls = edit("2Gi", false, pending(corev1.PodReasonInfeasible))
	if len(calls) > 0 {
		t.Errorf("an infeasible resize called %v", calls)
	}
	if c := podCondition(r, p, corev1.PodResizePending); !strings.Contains(c.Message, "memory") {
		t.Errorf("Infeasible message %q does not name memory", c.Message)
	}

	// Fits the node but not beside db: Deferred, nothing applied.
	_, calls = edit("600Mi", false, pending(corev1.PodReasonDeferred))
	if len(calls) > 0 {
		t.Errorf("a deferred resize called %v", calls)
	}

	// db goes: the deferred resize is tried again at the next resync and
	// applied.
	mark := f.mark()
	p = withMemory(web, "600Mi")
	r.send(t, source1(snap, p))
	waitFor(t, "db gone", func() bool { _, cs, _ := f.podObjects(string(db.UID)); return len(cs) == 0 })
	f.clk.Step(11 * time.Second)
	waitFor(t, "the deferred resize applied", func() bool {
		return memoryIs(p, "600Mi", "600Mi") && podCondition(r, p, corev1.PodResizePending) == nil
	})
	r.idle(t, p)
	if got := count(mutatingCalls(f.callsSince(mark)), "UpdateContainerResources"); got != 1 {
		t.Errorf("UpdateContainerResources called %d times for the deferred resize, want 1", got)
	}
	if c, _ := containerStatus(r, p, "app"); c.ContainerID != before.ContainerID || c.RestartCount != 0 {
		t.Errorf("container %s restarts %d, want %s with 0", c.ContainerID, c.RestartCount, before.ContainerID)
	}
}

// source1 is snap with only pod p.
func source1(snap source.Snapshot, p *corev1.Pod) source.Snapshot {
	snap.Pods = []*corev1.Pod{p}
	return snap
}
