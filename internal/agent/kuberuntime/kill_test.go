package kuberuntime

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// before fails unless every call in order appears in calls in that order.
func before(t *testing.T, calls []string, order ...string) {
	t.Helper()
	last := -1
	for _, want := range order {
		i := indexOf(calls, want)
		if i < 0 {
			t.Fatalf("no call %q in %v", want, calls)
		}
		if i < last {
			t.Fatalf("call %q came before %q: %v", want, order[0], calls)
		}
		last = i
	}
}

func TestTerminatePod(t *testing.T) {
	logRoot := t.TempDir()
	e := newEnv(t, func(c *Config) { c.PodConfig.PodLogRoot = logRoot })
	pod := testPod(func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(17)) })
	e.mustSync(pod)
	c := e.running(pod, "app")
	pr := e.observe(pod)
	sandbox := pr.Observed.Sandboxes[0].ID

	logDir := filepath.Join(logRoot, "default_web_uid-1")
	if err := os.MkdirAll(filepath.Join(logDir, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logDir, "app", "0.log"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	mark := e.log.len()
	if err := e.m.TerminatePod(e.ctx, pod, pr); err != nil {
		t.Fatalf("TerminatePod: %v", err)
	}
	calls := e.log.since(mark)
	before(t, calls,
		"StopContainer:"+c.ID,
		"StopPodSandbox:"+sandbox,
		"RemoveContainer:"+c.ID,
		"RemovePodSandbox:"+sandbox,
		"Volumes.Remove:uid-1",
	)
	if got, want := e.rt.stopTimeouts(c.ID), []int64{17}; !cmp.Equal(got, want) {
		t.Errorf("StopContainer timeouts = %v, want %v (the pod's grace period)", got, want)
	}
	if got := e.rt.allContainerIDs(); len(got) != 0 {
		t.Errorf("containers left: %v", got)
	}
	if got := e.rt.allSandboxIDs(); len(got) != 0 {
		t.Errorf("sandboxes left: %v", got)
	}
	if _, err := os.Stat(logDir); !os.IsNotExist(err) {
		t.Errorf("pod log dir %s still there: %v", logDir, err)
	}

	// Idempotent: a second call on what is left does nothing and succeeds.
	mark = e.log.len()
	if err := e.m.TerminatePod(e.ctx, pod, e.observe(pod)); err != nil {
		t.Fatalf("second TerminatePod: %v", err)
	}
	for _, p := range []string{"Stop", "RemoveContainer", "RemovePodSandbox"} {
		if got := withPrefix(e.log.since(mark), p); len(got) != 0 {
			t.Errorf("second TerminatePod made %v", got)
		}
	}
}

// A teardown retried after the sandboxes went knows the pod by UID alone;
// its logs go all the same, and only its.
func TestTerminatePodByUIDRemovesLogs(t *testing.T) {
	logRoot := t.TempDir()
	e := newEnv(t, func(c *Config) { c.PodConfig.PodLogRoot = logRoot })
	mine := filepath.Join(logRoot, "default_web_uid-1")
	others := []string{filepath.Join(logRoot, "default_web_uid-10"), filepath.Join(logRoot, "uid-1")}
	for _, dir := range append(others, mine) {
		if err := os.MkdirAll(filepath.Join(dir, "app"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.m.TerminatePod(e.ctx, nil, &PodRuntime{UID: "uid-1"}); err != nil {
		t.Fatalf("TerminatePod: %v", err)
	}
	if _, err := os.Stat(mine); !os.IsNotExist(err) {
		t.Errorf("pod log dir %s still there: %v", mine, err)
	}
	for _, dir := range others {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("log dir %s of another pod: %v", dir, err)
		}
	}
}

func TestTerminatePodWithoutSpecUsesStoredGracePeriod(t *testing.T) {
	e := newEnv(t)
	pod := testPod(func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(17)) })
	e.mustSync(pod)
	c := e.running(pod, "app")

	// A new manager (the agent restarted) that never saw the manifest.
	m := New(Config{Runtime: e.rt, Images: e.img, Volumes: e.vol, Clock: e.clk, PodConfig: e.m.cfg.PodConfig,
		CrashBackoff: e.m.cfg.CrashBackoff, PullBackoff: e.m.cfg.PullBackoff})
	pods, err := m.ListPods(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	pr := pods[string(pod.UID)]
	if pr == nil {
		t.Fatalf("ListPods = %v, want pod %s", pods, pod.UID)
	}
	if pr.Name != "web" || pr.Namespace != "default" {
		t.Errorf("listed pod = %s/%s, want default/web", pr.Namespace, pr.Name)
	}
	if err := m.TerminatePod(e.ctx, nil, pr); err != nil {
		t.Fatalf("TerminatePod(nil): %v", err)
	}
	if got, want := e.rt.stopTimeouts(c.ID), []int64{17}; !cmp.Equal(got, want) {
		t.Errorf("StopContainer timeouts = %v, want %v (from the container's annotation)", got, want)
	}
	if got := e.rt.allContainerIDs(); len(got) != 0 {
		t.Errorf("containers left: %v", got)
	}
	if got := e.rt.allSandboxIDs(); len(got) != 0 {
		t.Errorf("sandboxes left: %v", got)
	}
}

func TestPreStopHookRunsBeforeStopAndUsesGracePeriod(t *testing.T) {
	tests := []struct {
		name      string
		grace     int64
		hookTakes time.Duration
		want      int64
	}{
		{name: "quick hook", grace: 30, hookTakes: 0, want: 30},
		{name: "hook uses part", grace: 30, hookTakes: 20 * time.Second, want: 10},
		{name: "hook uses nearly all", grace: 30, hookTakes: 29 * time.Second, want: minGracePeriod},
		{name: "hook overruns", grace: 30, hookTakes: 45 * time.Second, want: minGracePeriod},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			pod := testPod(func(p *corev1.Pod) {
				p.Spec.TerminationGracePeriodSeconds = ptr(tc.grace)
				p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
					PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"drain"}}},
				}
			})
			var hookDeadline time.Duration
			e.setHook(func(ctx context.Context, _ *corev1.Pod, c *corev1.Container, id, _ string, h *corev1.LifecycleHandler) error {
				if h.Exec == nil || h.Exec.Command[0] != "drain" {
					t.Errorf("hook got handler %+v, want the preStop handler", h)
				}
				if d, ok := ctx.Deadline(); ok {
					hookDeadline = time.Until(d)
				}
				e.log.add("preStop:%s", id)
				e.clk.Step(tc.hookTakes)
				return nil
			})
			e.mustSync(pod)
			c := e.running(pod, "app")
			if err := e.m.TerminatePod(e.ctx, pod, e.observe(pod)); err != nil {
				t.Fatalf("TerminatePod: %v", err)
			}
			before(t, e.log.since(0), "preStop:"+c.ID, "StopContainer:"+c.ID)
			if got := e.rt.stopTimeouts(c.ID); !cmp.Equal(got, []int64{tc.want}) {
				t.Errorf("StopContainer timeouts = %v, want [%d]", got, tc.want)
			}
			if hookDeadline <= 0 || hookDeadline > time.Duration(tc.grace)*time.Second {
				t.Errorf("hook context deadline in %v, want within the grace period %ds", hookDeadline, tc.grace)
			}
		})
	}
}

func TestPreStopNotRunForExitedContainer(t *testing.T) {
	e := newEnv(t)
	pod := testPod(func(p *corev1.Pod) {
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
			PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"drain"}}},
		}
	})
	hooks := 0
	e.setHook(func(context.Context, *corev1.Pod, *corev1.Container, string, string, *corev1.LifecycleHandler) error {
		hooks++
		return nil
	})
	e.mustSync(pod)
	c := e.running(pod, "app")
	e.rt.exit(t, c.ID, 0, e.clk.Now())
	if err := e.m.TerminatePod(e.ctx, pod, e.observe(pod)); err != nil {
		t.Fatalf("TerminatePod: %v", err)
	}
	if hooks != 0 {
		t.Errorf("preStop ran %d times for an exited container", hooks)
	}
	if got := e.rt.stopTimeouts(c.ID); len(got) != 0 {
		t.Errorf("StopContainer on an exited container: %v", got)
	}
	if got := e.rt.allContainerIDs(); len(got) != 0 {
		t.Errorf("containers left: %v", got)
	}
}

func TestSpecChangeRunsPreStopOfOldContainer(t *testing.T) {
	e := newEnv(t)
	withPreStop := func(p *corev1.Pod) {
		p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
			PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"drain"}}},
		}
	}
	pod := testPod(withPreStop)
	e.setHook(func(_ context.Context, _ *corev1.Pod, c *corev1.Container, id, _ string, _ *corev1.LifecycleHandler) error {
		e.log.add("preStop:%s", id)
		return nil
	})
	e.mustSync(pod)
	old := e.running(pod, "app")
	edited := testPod(withPreStop, func(p *corev1.Pod) { p.Spec.Containers[0].Args = []string{"x"} })
	e.mustSync(edited)
	before(t, e.log.since(0), "preStop:"+old.ID, "StopContainer:"+old.ID, "CreateContainer:app:1")
}

// A preStop HTTP hook without a host goes to the pod IP, as the kubelet
// does; the hook runner falls back to 127.0.0.1 (the agent's own network)
// when it is given none.
func TestPreStopHookGetsPodIP(t *testing.T) {
	e := newEnv(t)
	pod := testPod(func(p *corev1.Pod) {
		p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
			PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/drain", Port: intstr.FromInt32(8080)}},
		}
	})
	var got []string
	var mu sync.Mutex
	e.setHook(func(_ context.Context, _ *corev1.Pod, _ *corev1.Container, _, podIP string, _ *corev1.LifecycleHandler) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, podIP)
		return nil
	})
	e.mustSync(pod)
	if err := e.m.TerminatePod(e.ctx, pod, e.observe(pod)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"192.168.192.168"}; !cmp.Equal(got, want) {
		t.Errorf("preStop hook pod IPs = %q, want %q", got, want)
	}
}
