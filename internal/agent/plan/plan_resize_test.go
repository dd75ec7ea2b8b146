package plan

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/crib-dev/crib/internal/agent/labels"
)

// withResources gives the named container (app or init) requests and
// limits, "" for none, and resize policies (resource -> policy).
func withResources(name, cpu, mem string, policies map[corev1.ResourceName]corev1.ResourceResizeRestartPolicy) podOpt {
	return func(p *corev1.Pod) {
		set := func(c *corev1.Container) {
			if c.Name != name {
				return
			}
			l := corev1.ResourceList{}
			if cpu != "" {
				l[corev1.ResourceCPU] = resource.MustParse(cpu)
			}
			if mem != "" {
				l[corev1.ResourceMemory] = resource.MustParse(mem)
			}
			c.Resources = corev1.ResourceRequirements{Requests: l, Limits: l}
			c.ResizePolicy = nil
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if pol, ok := policies[r]; ok {
					c.ResizePolicy = append(c.ResizePolicy, corev1.ContainerResizePolicy{ResourceName: r, RestartPolicy: pol})
				}
			}
		}
		for i := range p.Spec.Containers {
			set(&p.Spec.Containers[i])
		}
		for i := range p.Spec.InitContainers {
			set(&p.Spec.InitContainers[i])
		}
	}
}

// made gives instance c the hashes an agent stores when it creates it from
// pod p, and the resources the runtime reports for it.
func made(p *corev1.Pod, r *Resources, c Container) Container {
	list := p.Spec.Containers
	if c.Type == labels.TypeInit {
		list = p.Spec.InitContainers
	}
	for i := range list {
		if list[i].Name == c.Name {
			c.Hash, c.ResizeHash = ContainerHash(p, &list[i]), ResizeHash(p, &list[i])
		}
	}
	c.Resources = r
	return c
}

// res is what podconfig makes of limits equal to requests of cpu millicores
// and mem bytes, enough for the plan's comparison.
func res(milliCPU, mem int64) Resources {
	return Resources{CPUShares: milliCPU * 1024 / 1000, CPUQuota: milliCPU * 100, CPUPeriod: 100000, MemoryLimit: mem}
}

func ptr[T any](v T) *T { return &v }

func resize(c Container, typ string, idx int, to Resources) wantOpt {
	return func(a *Actions) {
		a.ContainersToResize = append(a.ContainersToResize, Resize{ID: c.ID, Name: c.Name, Type: typ, Index: idx, To: to})
	}
}

// TestResize: a change only to a running container's resources is a resize,
// done in place when every resource that differs allows it (resizePolicy
// NotRequired, the default) and by a restart otherwise; containers made
// before the agent stored the resize hash are restarted, as before.
func TestResize(t *testing.T) {
	const mi = 1 << 20
	notReq := map[corev1.ResourceName]corev1.ResourceResizeRestartPolicy{corev1.ResourceCPU: corev1.NotRequired, corev1.ResourceMemory: corev1.NotRequired}
	memRestart := map[corev1.ResourceName]corev1.ResourceResizeRestartPolicy{corev1.ResourceCPU: corev1.NotRequired, corev1.ResourceMemory: corev1.RestartContainer}

	old := newPod(always, withResources("app", "500m", "64Mi", notReq))
	bigger := newPod(always, withResources("app", "500m", "128Mi", notReq))
	oldActual := ptr(res(500, 64*mi))
	want128 := map[string]Resources{"app": res(500, 128*mi)}
	cur := running(made(old, oldActual, app(old, "app", 0)))

	oldR := newPod(always, withResources("app", "500m", "64Mi", memRestart))
	memR := newPod(always, withResources("app", "500m", "128Mi", memRestart))
	cpuR := newPod(always, withResources("app", "1", "64Mi", memRestart))
	curR := running(made(oldR, oldActual, app(oldR, "app", 0)))

	edited := newPod(always, withResources("app", "500m", "128Mi", notReq), func(p *corev1.Pod) { p.Spec.Containers[0].Args = []string{"x"} })

	legacy := cur
	legacy.ResizeHash = ""

	sidecarOld := newPod(always, withInit("proxy"), withSidecars("proxy"), withResources("proxy", "100m", "32Mi", nil))
	sidecarNew := newPod(always, withInit("proxy"), withSidecars("proxy"), withResources("proxy", "200m", "32Mi", nil))
	proxy := running(made(sidecarOld, ptr(res(100, 32*mi)), initC(sidecarOld, "proxy", 0)))
	proxyApp := running(app(sidecarNew, "app", 1))

	onFailOld := newPod(onFailure, withResources("app", "500m", "64Mi", notReq))
	onFailNew := newPod(onFailure, withResources("app", "500m", "128Mi", notReq))

	resizedSB := readySB(curSB, 1)
	resizedSB.Hash, resizedSB.ResizeHash = "before-resize", "resize-hash"

	run(t, []planCase{
		{
			name: "memory limit grows, NotRequired: resized in place",
			in:   Input{Pod: bigger, Observed: obs(cur), Resources: want128},
			want: want(resize(cur, labels.TypeApp, 0, res(500, 128*mi))),
		},
		{
			name: "resize already done: the runtime reports what the spec asks",
			in:   Input{Pod: bigger, Observed: obs(running(made(old, ptr(res(500, 128*mi)), app(old, "app", 0)))), Resources: want128},
			want: nothing,
		},
		{
			name: "memory request alone changed: nothing reaches the runtime",
			in:   Input{Pod: bigger, Observed: obs(cur), Resources: map[string]Resources{"app": *oldActual}},
			want: nothing,
		},
		{
			name: "memory changes, its policy is RestartContainer: restarted",
			in:   Input{Pod: memR, Observed: obs(curR), Resources: want128},
			want: want(kill(curR, ReasonResizeRestart), start(0, 1)),
		},
		{
			name: "only cpu changes, NotRequired for cpu, RestartContainer for memory: resized in place",
			in:   Input{Pod: cpuR, Observed: obs(curR), Resources: map[string]Resources{"app": res(1000, 64*mi)}},
			want: want(resize(curR, labels.TypeApp, 0, res(1000, 64*mi))),
		},
		{
			name: "cpu and memory change, memory needs a restart: restarted",
			in:   Input{Pod: cpuR, Observed: obs(curR), Resources: map[string]Resources{"app": res(1000, 128*mi)}},
			want: want(kill(curR, ReasonResizeRestart), start(0, 1)),
		},
		{
			name: "container made before the resize hash: restarted as any edit",
			in:   Input{Pod: bigger, Observed: obs(legacy), Resources: want128},
			want: want(kill(legacy, ReasonSpecChanged), start(0, 1)),
		},
		{
			name: "resources and another field changed: restarted",
			in:   Input{Pod: edited, Observed: obs(cur), Resources: want128},
			want: want(kill(cur, ReasonSpecChanged), start(0, 1)),
		},
		{
			name: "the runtime does not report resources: restarted",
			in:   Input{Pod: bigger, Observed: obs(running(made(old, nil, app(old, "app", 0)))), Resources: want128},
			want: want(kill(cur, ReasonResizeRestart), start(0, 1)),
		},
		{
			name: "liveness failed during a resize: restarted, not resized",
			in:   Input{Pod: bigger, Observed: obs(cur), Resources: want128, LivenessFailed: map[string]bool{cur.ID: true}},
			want: want(kill(cur, ReasonLivenessFailed), start(0, 1)),
		},
		{
			name: "sidecar cpu grows: resized in place",
			in: Input{Pod: sidecarNew, Observed: obs(proxy, proxyApp),
				Resources: map[string]Resources{"proxy": res(200, 32*mi), "app": {}}},
			want: want(resize(proxy, labels.TypeInit, 0, res(200, 32*mi))),
		},
		{
			name: "OnFailure, succeeded, then resized: a resize is not an edit, it stays done",
			in:   Input{Pod: onFailNew, Observed: obs(exited(0, made(onFailOld, oldActual, app(onFailOld, "app", 0)))), Resources: want128},
			want: want(killPod),
		},
		{
			name: "sandbox only resized: kept, its container resized",
			in: Input{Pod: bigger, Observed: Observed{Sandboxes: []Sandbox{resizedSB}, Containers: []Container{cur}},
				SandboxResizeHash: "resize-hash", Resources: want128},
			want: want(resize(cur, labels.TypeApp, 0, res(500, 128*mi))),
		},
		{
			name: "sandbox changed beyond its resources: recreated",
			in: Input{Pod: bigger, Observed: Observed{Sandboxes: []Sandbox{resizedSB}, Containers: []Container{cur}},
				SandboxResizeHash: "other", Resources: want128},
			want: want(newSandbox(2, true), start(0, 1)),
		},
	})
}
