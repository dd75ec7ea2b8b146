package podstatus

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/crib-dev/crib/internal/agent/plan"
)

// sizedPod is a pod with app container "app" whose requests equal its
// limits.
func sizedPod(cpu, mem string) *corev1.Pod {
	p := testPod(always, nil, "app")
	l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: l, Limits: l}
	return p
}

// runsWith is a running "app" whose runtime reports the resources it was
// made with from cpu and mem, as podconfig converts them (at least the
// kernel's 2 shares).
func runsWith(cpuMilli, mem int64) plan.Container {
	c := app("app", running, 0, 0)
	c.Resources = &plan.Resources{CPUShares: max(2, cpuMilli*1024/1000), CPUQuota: cpuMilli * 100, CPUPeriod: 100000, MemoryLimit: mem}
	return c
}

func condition(st corev1.PodStatus, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

func TestResizeStatus(t *testing.T) {
	const mi = 1 << 20
	rl := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	tests := []struct {
		name       string
		pod        *corev1.Pod
		allocated  *corev1.Pod
		pending    *ResizePending
		ctr        plan.Container
		phase      corev1.PodPhase // of the observed container's pod, when not running
		wantAlloc  corev1.ResourceList
		wantRes    *corev1.ResourceRequirements
		inProgress bool
	}{
		{
			name: "no resize: actual reads exactly as allocated",
			pod:  sizedPod("500m", "64Mi"), ctr: runsWith(500, 64*mi),
			wantAlloc: rl("500m", "64Mi"),
			wantRes:   &corev1.ResourceRequirements{Requests: rl("500m", "64Mi"), Limits: rl("500m", "64Mi")},
		},
		{
			name: "allocated, not yet actuated: in progress, resources show what runs",
			pod:  sizedPod("1", "128Mi"), ctr: runsWith(500, 64*mi),
			wantAlloc: rl("1", "128Mi"),
			// The memory request is never reported by the runtime: it shows as allocated.
			wantRes:    &corev1.ResourceRequirements{Requests: rl("500m", "128Mi"), Limits: rl("500m", "64Mi")},
			inProgress: true,
		},
		{
			name: "infeasible: pending, allocated stays, nothing in progress",
			pod:  sizedPod("500m", "8Gi"), allocated: sizedPod("500m", "64Mi"),
			pending:   &ResizePending{Reason: corev1.PodReasonInfeasible, Message: "Node didn't have enough capacity: memory"},
			ctr:       runsWith(500, 64*mi),
			wantAlloc: rl("500m", "64Mi"),
			wantRes:   &corev1.ResourceRequirements{Requests: rl("500m", "64Mi"), Limits: rl("500m", "64Mi")},
		},
		{
			name: "not running: resources as allocated",
			pod:  sizedPod("1", "128Mi"), ctr: app("app", exited, 0, 1),
			wantAlloc: rl("1", "128Mi"),
			wantRes:   &corev1.ResourceRequirements{Requests: rl("1", "128Mi"), Limits: rl("1", "128Mi")},
		},
		{
			name:      "runtime reports nothing: as allocated, no progress to tell",
			pod:       sizedPod("1", "128Mi"),
			ctr:       app("app", running, 0, 0),
			wantAlloc: rl("1", "128Mi"),
			wantRes:   &corev1.ResourceRequirements{Requests: rl("1", "128Mi"), Limits: rl("1", "128Mi")},
		},
		{
			name: "best effort: nothing allocated",
			pod:  testPod(always, nil, "app"), ctr: runsWith(0, 0),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := Compute(Facts{
				Pod: tt.pod, Allocated: tt.allocated, ResizePending: tt.pending,
				Observed: plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{tt.ctr}},
				Now:      t0,
			})
			cs := st.ContainerStatuses[0]
			if diff := cmp.Diff(tt.wantAlloc, cs.AllocatedResources); diff != "" {
				t.Errorf("allocatedResources (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRes, cs.Resources); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
			pend := condition(st, corev1.PodResizePending)
			switch {
			case tt.pending == nil && pend != nil:
				t.Errorf("unexpected %+v", pend)
			case tt.pending != nil && (pend == nil || pend.Status != corev1.ConditionTrue || pend.Reason != tt.pending.Reason || pend.Message != tt.pending.Message):
				t.Errorf("PodResizePending = %+v, want True %s", pend, tt.pending.Reason)
			}
			if got := condition(st, corev1.PodResizeInProgress) != nil; got != tt.inProgress {
				t.Errorf("PodResizeInProgress present = %t, want %t", got, tt.inProgress)
			}
		})
	}
}

func TestResizeErrorShowsInProgress(t *testing.T) {
	st := Compute(Facts{
		Pod:         sizedPod("500m", "64Mi"),
		ResizeError: "resize container app: device or resource busy",
		Observed:    plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{runsWith(500, 128<<20)}},
		Now:         t0,
	})
	c := condition(st, corev1.PodResizeInProgress)
	if c == nil || c.Reason != corev1.PodReasonError || c.Message != "resize container app: device or resource busy" {
		t.Errorf("PodResizeInProgress = %+v, want reason Error with the failure", c)
	}
}

func TestResizeConditionsGoWithAFinishedPod(t *testing.T) {
	pod := testPod(corev1.RestartPolicyNever, nil, "app")
	st := Compute(Facts{
		Pod:           pod,
		ResizePending: &ResizePending{Reason: corev1.PodReasonDeferred, Message: "no room"},
		Observed:      plan.Observed{Sandboxes: []plan.Sandbox{readySandbox()}, Containers: []plan.Container{app("app", exited, 0, 0)}},
		Now:           t0,
	})
	if st.Phase != corev1.PodSucceeded || condition(st, corev1.PodResizePending) != nil {
		t.Errorf("phase %s conditions %+v: a finished pod shows no resize", st.Phase, st.Conditions)
	}
}
