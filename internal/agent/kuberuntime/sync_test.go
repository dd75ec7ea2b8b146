package kuberuntime

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/plan"
)

func withInit(names ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		for _, n := range names {
			p.Spec.InitContainers = append(p.Spec.InitContainers, testContainer(n))
		}
	}
}

func TestSyncPodRunsInitContainersOneAtATimeThenApps(t *testing.T) {
	e := newEnv(t)
	pod := testPod(withInit("init1", "init2"), func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, testContainer("side"))
	})
	creates := func(mark int) []string { return withPrefix(e.log.since(mark), "CreateContainer") }

	mark := e.log.len()
	e.mustSync(pod)
	calls := e.log.since(mark)
	if got, want := withPrefix(calls, "RunPodSandbox"), []string{"RunPodSandbox:0"}; !cmp.Equal(got, want) {
		t.Fatalf("first sync sandboxes = %v, want %v", got, want)
	}
	if got, want := creates(mark), []string{"CreateContainer:init1:0"}; !cmp.Equal(got, want) {
		t.Fatalf("first sync creates = %v, want %v", got, want)
	}
	if indexOf(calls, "RunPodSandbox:0") > indexOf(calls, "CreateContainer:init1:0") {
		t.Errorf("container created before its sandbox: %v", calls)
	}
	init1 := e.running(pod, "init1")

	// Nothing more while init1 runs.
	mark = e.log.len()
	e.mustSync(pod)
	if got := creates(mark); len(got) != 0 {
		t.Fatalf("sync while init1 runs created %v", got)
	}

	e.rt.exit(t, init1.ID, 0, e.clk.Now())
	mark = e.log.len()
	e.mustSync(pod)
	if got, want := creates(mark), []string{"CreateContainer:init2:0"}; !cmp.Equal(got, want) {
		t.Fatalf("after init1 exited 0 creates = %v, want %v", got, want)
	}

	e.rt.exit(t, e.running(pod, "init2").ID, 0, e.clk.Now())
	mark = e.log.len()
	e.mustSync(pod)
	calls = e.log.since(mark)
	if got, want := withPrefix(calls, "CreateContainer"), []string{"CreateContainer:app:0", "CreateContainer:side:0"}; !cmp.Equal(got, want) {
		t.Fatalf("after init2 exited 0 creates = %v, want %v", got, want)
	}
	if got := withPrefix(calls, "RunPodSandbox"); len(got) != 0 {
		t.Errorf("app containers got a new sandbox: %v", got)
	}
	e.running(pod, "app")
	e.running(pod, "side")

	// Steady state: nothing is created, stopped or removed.
	mark = e.log.len()
	e.mustSync(pod)
	for _, p := range []string{"Create", "Stop", "Remove", "RunPodSandbox"} {
		if got := withPrefix(e.log.since(mark), p); len(got) != 0 {
			t.Errorf("steady sync made %v", got)
		}
	}
}

func TestSyncPodFailedInitContainerRestartsWithAttempt(t *testing.T) {
	e := newEnv(t)
	pod := testPod(withInit("init1"))
	e.mustSync(pod)
	e.rt.exit(t, e.running(pod, "init1").ID, 3, e.clk.Now())

	mark := e.log.len()
	e.sync(pod)
	calls := e.log.since(mark)
	if got, want := withPrefix(calls, "CreateContainer"), []string{"CreateContainer:init1:1"}; !cmp.Equal(got, want) {
		t.Fatalf("after init1 exited 3 creates = %v, want %v (no app container before init succeeds)", got, want)
	}
}

func TestCreateContainerConfigCarriesAgentLabels(t *testing.T) {
	e := newEnv(t)
	pod := testPod(withInit("init1"))
	e.mustSync(pod)

	check := func(name, typ string, restart uint32) {
		t.Helper()
		cfg := e.rt.lastCreated()
		if cfg == nil {
			t.Fatal("no CreateContainer")
		}
		spec := specContainer(pod, name)
		wantLabels := map[string]string{
			labels.PodName:       pod.Name,
			labels.PodNamespace:  pod.Namespace,
			labels.PodUID:        string(pod.UID),
			labels.ContainerName: name,
			labels.ManagedBy:     labels.ManagedByValue,
		}
		for k, v := range wantLabels {
			if cfg.Labels[k] != v {
				t.Errorf("%s: label %s = %q, want %q (all: %v)", name, k, cfg.Labels[k], v, cfg.Labels)
			}
		}
		wantAnn := map[string]string{
			labels.ContainerHash:          plan.ContainerHash(pod, spec),
			labels.RestartCount:           strconv.FormatUint(uint64(restart), 10),
			labels.ContainerType:          typ,
			labels.TerminationGracePeriod: "30",
		}
		for k, v := range wantAnn {
			if cfg.Annotations[k] != v {
				t.Errorf("%s: annotation %s = %q, want %q (all: %v)", name, k, cfg.Annotations[k], v, cfg.Annotations)
			}
		}
		if cfg.Metadata.GetName() != name || cfg.Metadata.GetAttempt() != restart {
			t.Errorf("%s: metadata = %v, want name %s attempt %d", name, cfg.Metadata, name, restart)
		}
		if got := cfg.GetImage().GetUserSpecifiedImage(); got != spec.Image {
			t.Errorf("%s: user specified image = %q, want %q", name, got, spec.Image)
		}
	}
	check("init1", labels.TypeInit, 0)
	e.rt.exit(t, e.running(pod, "init1").ID, 0, e.clk.Now())
	e.mustSync(pod)
	check("app", labels.TypeApp, 0)
}

func TestSandboxConfigCarriesHashAndLabels(t *testing.T) {
	e := newEnv(t)
	pod := testPod()
	e.mustSync(pod)
	e.rt.mu.Lock()
	sbs := append(e.rt.sandbox[:0:0], e.rt.sandbox...)
	e.rt.mu.Unlock()
	if len(sbs) != 1 {
		t.Fatalf("RunPodSandbox calls = %d, want 1", len(sbs))
	}
	sb := sbs[0]
	hash := sb.Annotations[labels.SandboxHash]
	if hash == "" {
		t.Fatalf("sandbox config has no %s annotation: %v", labels.SandboxHash, sb.Annotations)
	}
	for k, v := range map[string]string{
		labels.PodName: pod.Name, labels.PodNamespace: pod.Namespace, labels.PodUID: string(pod.UID), labels.ManagedBy: labels.ManagedByValue,
	} {
		if sb.Labels[k] != v {
			t.Errorf("sandbox label %s = %q, want %q", k, sb.Labels[k], v)
		}
	}
	if sb.Metadata.GetUid() != string(pod.UID) || sb.Metadata.GetAttempt() != 0 {
		t.Errorf("sandbox metadata = %v", sb.Metadata)
	}
	obs := e.observe(pod).Observed
	if len(obs.Sandboxes) != 1 || obs.Sandboxes[0].Hash != hash {
		t.Fatalf("observed sandboxes = %+v, want one with hash %s", obs.Sandboxes, hash)
	}

	// The hash is a function of the config: the same pod hashes the same,
	// a pod-level change hashes differently.
	again, err := e.m.sandboxConfig(testPod(), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Annotations[labels.SandboxHash] != hash {
		t.Errorf("hash of the same pod at attempt 3 = %s, want %s", again.Annotations[labels.SandboxHash], hash)
	}
	changed, err := e.m.sandboxConfig(testPod(func(p *corev1.Pod) { p.Spec.Hostname = "other" }), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if changed.Annotations[labels.SandboxHash] == hash {
		t.Errorf("a new hostname kept the sandbox hash %s", hash)
	}
}

func TestSandboxChangeRecreatesPod(t *testing.T) {
	e := newEnv(t)
	pod := testPod()
	e.mustSync(pod)
	old := e.running(pod, "app")
	oldSandbox := e.observe(pod).Observed.Sandboxes[0].ID

	edited := testPod(func(p *corev1.Pod) { p.Spec.Hostname = "other" })
	mark := e.log.len()
	e.mustSync(edited)
	calls := e.log.since(mark)
	stopC, stopS, run := indexOf(calls, "StopContainer:"+old.ID), indexOf(calls, "StopPodSandbox:"+oldSandbox), indexOf(calls, "RunPodSandbox:1")
	if stopC < 0 || stopS < 0 || run < 0 || !(stopC < stopS && stopS < run) {
		t.Fatalf("calls = %v, want StopContainer(old) < StopPodSandbox(old) < RunPodSandbox:1", calls)
	}
	if got := withPrefix(calls, "CreateContainer"); !cmp.Equal(got, []string{"CreateContainer:app:1"}) {
		t.Errorf("creates = %v, want app with attempt 1", got)
	}
	c := e.running(edited, "app")
	if c.SandboxID == oldSandbox {
		t.Errorf("new container runs in the old sandbox %s", oldSandbox)
	}
}

func TestSpecChangeReplacesContainerWithNextAttempt(t *testing.T) {
	e := newEnv(t)
	pod := testPod()
	e.mustSync(pod)
	old := e.running(pod, "app")

	edited := testPod(func(p *corev1.Pod) { p.Spec.Containers[0].Command = []string{"sleep", "7200"} })
	mark := e.log.len()
	e.mustSync(edited)
	calls := e.log.since(mark)
	stop, create := indexOf(calls, "StopContainer:"+old.ID), indexOf(calls, "CreateContainer:app:1")
	if stop < 0 || create < 0 || stop > create {
		t.Fatalf("calls = %v, want StopContainer(%s) then CreateContainer:app:1", calls, old.ID)
	}
	if got := withPrefix(calls, "RunPodSandbox"); len(got) != 0 {
		t.Errorf("a container spec change made a new sandbox: %v", got)
	}
	cfg := e.rt.lastCreated()
	if got, want := cfg.Command, []string{"sleep", "7200"}; !cmp.Equal(got, want) {
		t.Errorf("new command = %v, want %v", got, want)
	}
	if got, want := cfg.Annotations[labels.ContainerHash], plan.ContainerHash(edited, &edited.Spec.Containers[0]); got != want {
		t.Errorf("new hash = %s, want %s", got, want)
	}
	if cfg.Annotations[labels.ContainerHash] == old.Hash {
		t.Errorf("hash did not change with the command")
	}
	c := e.running(edited, "app") // exactly one live instance
	if c.ID == old.ID {
		t.Errorf("the old container still runs")
	}

	// The next sync of the edited pod leaves it alone.
	mark = e.log.len()
	e.mustSync(edited)
	if got := withPrefix(e.log.since(mark), "CreateContainer"); len(got) != 0 {
		t.Errorf("second sync after the edit created %v", got)
	}
	if got := withPrefix(e.log.since(mark), "StopContainer"); len(got) != 0 {
		t.Errorf("second sync after the edit stopped %v", got)
	}
}

func TestPostStartHook(t *testing.T) {
	withPostStart := func(p *corev1.Pod) {
		p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
			PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
		}
	}
	t.Run("success", func(t *testing.T) {
		e := newEnv(t)
		e.setHook(func(_ context.Context, _ *corev1.Pod, c *corev1.Container, id, podIP string, h *corev1.LifecycleHandler) error {
			e.log.add("hook:%s:%s:%s", c.Name, id, podIP)
			return nil
		})
		pod := testPod(withPostStart)
		e.mustSync(pod)
		c := e.running(pod, "app")
		calls := e.log.since(0)
		start, hook := indexOf(calls, "StartContainer:"+c.ID), indexOf(calls, "hook:app:"+c.ID+":192.168.192.168")
		if start < 0 || hook < 0 || start > hook {
			t.Fatalf("calls = %v, want StartContainer then the postStart hook with the pod IP", calls)
		}
		if w := e.waitingOf(string(pod.UID)); len(w) != 0 {
			t.Errorf("Waiting = %v, want none", w)
		}
	})
	t.Run("failure", func(t *testing.T) {
		e := newEnv(t)
		e.setHook(func(_ context.Context, _ *corev1.Pod, c *corev1.Container, id, _ string, h *corev1.LifecycleHandler) error {
			e.log.add("hook:%s:%s", c.Name, id)
			return errors.New("boom")
		})
		pod := testPod(withPostStart)
		res := e.sync(pod)
		if res.Err == nil {
			t.Fatal("SyncPod: no error after a failed postStart hook")
		}
		calls := e.log.since(0)
		id := "web_default_uid-1_0_app_0"
		hook, stop := indexOf(calls, "hook:app:"+id), indexOf(calls, "StopContainer:"+id)
		if hook < 0 || stop < 0 || hook > stop {
			t.Fatalf("calls = %v, want the hook then StopContainer(%s)", calls, id)
		}
		w := e.waitingOf(string(pod.UID))["app"]
		if w.Reason != reasonPostStartHookError || !strings.Contains(w.Message, "boom") {
			t.Errorf("Waiting[app] = %+v, want %s mentioning the hook's error", w, reasonPostStartHookError)
		}
		if got := e.rt.containerIDs(runtimeapi.ContainerState_CONTAINER_RUNNING); len(got) != 0 {
			t.Errorf("running after a failed postStart: %v", got)
		}
	})
}
