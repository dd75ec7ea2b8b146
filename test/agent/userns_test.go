package agenttest

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/statusapi"
	"github.com/crib-dev/crib/internal/agent/userns"
)

// TestUserNamespaces runs pods with hostUsers: false, each with an emptyDir:
// each runs as root in its own block of host ids, never another live pod's,
// shown on /pods; an agent restart keeps a running pod's block and sandbox;
// once the pods are gone their blocks are given again. It has an agent of
// its own, since it restarts it.
func TestUserNamespaces(t *testing.T) {
	env := newRuntimeEnv(t)
	requireUserNamespaces(t, env)
	h := startAgent(t, env)
	srv := httptest.NewServer(statusapi.Handler(h.Store(), h.Agent().Events(), statusapi.NewMetrics()))
	t.Cleanup(srv.Close)

	a := usernsPod(env, "userns-a")
	b := usernsPod(env, "userns-b")
	h.writePod(t, a)
	h.writePod(t, b)
	ra, aRunning := waitUserns(t, h, env, a.Name)
	rb, _ := waitUserns(t, h, env, b.Name)
	if ra.First == rb.First {
		t.Fatalf("%s and %s share the block %s", a.Name, b.Name, ra)
	}

	// /pods serves the block of each.
	ctx, cancel := context.WithTimeout(context.Background(), criTimeout)
	defer cancel()
	list, err := statusapi.NewClient(srv.URL).Pods(ctx)
	if err != nil {
		t.Fatalf("GET /pods: %v", err)
	}
	served := map[string]string{}
	for _, p := range list.Items {
		served[p.Name] = p.Annotations[labels.UserNamespace]
	}
	if served[a.Name] != ra.String() || served[b.Name] != rb.String() {
		t.Fatalf("/pods shows %s=%q %s=%q, want %s and %s", a.Name, served[a.Name], b.Name, served[b.Name], ra, rb)
	}

	// A restart while a runs: a keeps its block and its sandbox, and a new
	// pod gets neither a's nor b's block.
	sandboxes := readySandboxes(env.sandboxes(t, string(aRunning.UID)))
	h.stop()
	h.start()
	c := usernsPod(env, "userns-c")
	h.writePod(t, c)
	rc, _ := waitUserns(t, h, env, c.Name)
	if rc.First == ra.First || rc.First == rb.First {
		t.Fatalf("after the restart %s got %s, held by a running pod (%s, %s)", c.Name, rc, ra, rb)
	}
	// Let the new agent relist and resync a few times.
	time.Sleep(4 * time.Second)
	again, _ := waitUserns(t, h, env, a.Name)
	if again != ra {
		t.Fatalf("after the restart %s shows %s, want its %s", a.Name, again, ra)
	}
	if now := readySandboxes(env.sandboxes(t, string(aRunning.UID))); !slices.Equal(now, sandboxes) {
		t.Fatalf("after the restart %s's sandboxes are %v, want the same %v", a.Name, now, sandboxes)
	}

	// Every pod gone, the lowest block is free again for a new pod.
	for _, p := range []*corev1.Pod{a, b, c} {
		h.removePod(t, p.Name)
	}
	for _, p := range []*corev1.Pod{a, b, c} {
		h.waitFor(t, p.Name, "gone", teardownWait, func(p *corev1.Pod) bool { return p == nil })
	}
	d := usernsPod(env, "userns-d")
	h.writePod(t, d)
	rd, _ := waitUserns(t, h, env, d.Name)
	lowest := min(ra.First, rb.First, rc.First)
	if rd.First != lowest {
		t.Fatalf("%s got %s, want the lowest block freed, %d", d.Name, rd, lowest)
	}
	if left := h.drain(); len(left) > 0 {
		t.Fatalf("after all manifests were removed the runtime still holds %v", left)
	}
}

// requireUserNamespaces skips the test unless the runtime's default
// handler says it supports user namespaces, as the agent requires. With
// CRIB_REQUIRE_USERNS set (scripts/test.sh), crib's own daemon lacking them
// fails the test instead.
func requireUserNamespaces(t *testing.T, env *runtimeEnv) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), criTimeout)
	defer cancel()
	st, err := env.rt.Status(ctx, false)
	if err != nil {
		t.Fatalf("runtime status: %v", err)
	}
	for _, h := range st.GetRuntimeHandlers() {
		if h.GetName() == "" && h.GetFeatures().GetUserNamespaces() {
			return
		}
	}
	if env.daemon != nil && os.Getenv("CRIB_REQUIRE_USERNS") != "" {
		t.Fatalf("crib at %s has no user namespaces, and CRIB_REQUIRE_USERNS is set:\n%s", env.endpoint, env.daemon.ReadLog())
	}
	t.Skipf("the runtime at %s does not say its default handler supports user namespaces "+
		"(StatusResponse.runtime_handlers[].features.user_namespaces): hostUsers: false pods cannot run on it", env.endpoint)
}

// usernsPod is a pod with hostUsers: false whose container prints its uid
// and uid map and writes to its emptyDir, then sleeps.
func usernsPod(env *runtimeEnv, name string) *corev1.Pod {
	c := env.shell("app", "id -u; cat /proc/self/uid_map; echo written > /scratch/f && cat /scratch/f; "+sleepForever)
	c.VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	p := podSpec(name, c)
	p.Spec.HostUsers = ptr(false)
	p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	return p
}

// waitUserns waits until the pod runs and shows its block, and checks from
// its log that it is root inside with ids 0-65535 mapped to that block and
// that it could write its emptyDir.
func waitUserns(t *testing.T, h *harness, env *runtimeEnv, name string) (userns.Range, *corev1.Pod) {
	t.Helper()
	p := h.waitFor(t, name, "running with a block of ids", longWait, func(p *corev1.Pod) bool {
		return running(p, "app") && p.Annotations[labels.UserNamespace] != ""
	})
	r, err := parseRange(p.Annotations[labels.UserNamespace])
	if err != nil {
		t.Fatalf("pod %s: %v", name, err)
	}
	if r.Length != userns.BlockSize || r.First < userns.BlockSize || r.First%userns.BlockSize != 0 {
		t.Fatalf("pod %s holds %s, not a block of 65536 host ids", name, r)
	}
	logs := containerLogs(h.LogRoot, p, "app")
	if len(logs) == 0 {
		t.Fatalf("pod %s: no log", name)
	}
	wantMap := fmt.Sprintf("0 %d %d", r.First, r.Length)
	lines := waitLog(t, logs[0], "uid, uid map and emptyDir", func(l []string) bool { return len(l) >= 3 })
	if lines[0] != "0" {
		t.Errorf("pod %s: id -u printed %q, want 0", name, lines[0])
	}
	if got := strings.Join(strings.Fields(lines[1]), " "); got != wantMap {
		t.Errorf("pod %s: uid_map is %q, want %q", name, got, wantMap)
	}
	if lines[2] != "written" {
		t.Errorf("pod %s: the emptyDir was not writable: %q", name, lines[2])
	}
	return r, p
}

// parseRange reads labels.UserNamespace's "FIRST+LENGTH".
func parseRange(s string) (userns.Range, error) {
	first, length, ok := strings.Cut(s, "+")
	f, err1 := strconv.ParseUint(first, 10, 32)
	l, err2 := strconv.ParseUint(length, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return userns.Range{}, fmt.Errorf("user namespace %q is not FIRST+LENGTH", s)
	}
	return userns.Range{First: uint32(f), Length: uint32(l)}, nil
}

// testHostUsersRefused: a pod with hostUsers: false is refused with the
// node's network namespace, as the API server refuses it, and, on a runtime
// that does not support user namespaces, waits with the reason and no
// sandbox, as the kubelet's does.
func testHostUsersRefused(t *testing.T, s *suite) {
	hostNet := usernsPod(s.env, "userns-hostnet")
	hostNet.Spec.HostNetwork = true
	s.h.writePod(t, hostNet)
	defer s.h.removePod(t, hostNet.Name)
	deadline := time.Now().Add(shortWait)
	for !refused(s.h.Store().SourceErrors(), hostNet.Name+".yaml", "spec.hostNetwork", "hostUsers") {
		if time.Now().After(deadline) {
			t.Fatalf("source errors %v do not refuse %s for spec.hostNetwork with hostUsers false", s.h.Store().SourceErrors(), hostNet.Name)
		}
		time.Sleep(pollEvery)
	}
	if _, ok := s.h.Store().Lookup("default", hostNet.Name); ok {
		t.Errorf("the refused pod is in the store")
	}

	ctx, cancel := context.WithTimeout(context.Background(), criTimeout)
	defer cancel()
	st, err := s.env.rt.Status(ctx, false)
	if err != nil {
		t.Fatalf("runtime status: %v", err)
	}
	for _, h := range st.GetRuntimeHandlers() {
		if h.GetName() == "" && h.GetFeatures().GetUserNamespaces() {
			t.Log("the runtime supports user namespaces: TestUserNamespaces runs such pods")
			return
		}
	}
	p := usernsPod(s.env, "userns-unsupported")
	s.h.writePod(t, p)
	got := s.h.waitFor(t, p.Name, "waiting for want of user namespaces", longWait, func(p *corev1.Pod) bool {
		if p == nil {
			return false
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReadyToStartContainers && c.Status == corev1.ConditionFalse &&
				strings.Contains(c.Message, "does not support user namespaces") {
				return true
			}
		}
		return false
	})
	if sbs := s.env.sandboxes(t, string(got.UID)); len(sbs) != 0 {
		t.Errorf("a sandbox was made for a pod the runtime cannot give a user namespace: %v", sbs)
	}
}

func refused(errs []statusapi.SourceError, file string, words ...string) bool {
	for _, e := range errs {
		if !strings.HasSuffix(e.Path, "/"+file) {
			continue
		}
		for _, w := range words {
			if !strings.Contains(e.Message, w) {
				return false
			}
		}
		return true
	}
	return false
}

// testProcMount: in a pod with hostUsers: false, a container with procMount
// Unmasked sees its /proc whole and one with Default has it masked (the
// kubelet's lists, sent by the agent); procMount Unmasked with the node's
// users is refused with the manifest, as the API server refuses it.
func testProcMount(t *testing.T, s *suite) {
	hostUsers := s.env.shell("app", sleepForever)
	hostUsers.SecurityContext = &corev1.SecurityContext{ProcMount: ptr(corev1.UnmaskedProcMount)}
	refusedPod := podSpec("procmount-host-users", hostUsers)
	s.h.writePod(t, refusedPod)
	defer s.h.removePod(t, refusedPod.Name)
	deadline := time.Now().Add(shortWait)
	for !refused(s.h.Store().SourceErrors(), refusedPod.Name+".yaml", "spec.containers[0].securityContext.procMount", "hostUsers") {
		if time.Now().After(deadline) {
			t.Fatalf("source errors %v do not refuse %s for procMount Unmasked with the node's users", s.h.Store().SourceErrors(), refusedPod.Name)
		}
		time.Sleep(pollEvery)
	}

	requireUserNamespaces(t, s.env)
	// /proc/timer_list is in the kubelet's masked list on every kernel
	// crib runs on; /proc/sys in its read-only list.
	const script = "stat -c %F /proc/timer_list; grep -c ' /proc/sys ' /proc/self/mountinfo; " + sleepForever
	def := s.env.shell("default", script)
	unmasked := s.env.shell("unmasked", script)
	unmasked.SecurityContext = &corev1.SecurityContext{ProcMount: ptr(corev1.UnmaskedProcMount)}
	p := podSpec("procmount", def, unmasked)
	p.Spec.HostUsers = ptr(false)
	s.h.writePod(t, p)
	defer s.h.removePod(t, p.Name)
	got := s.h.waitFor(t, p.Name, "running", longWait, func(p *corev1.Pod) bool {
		return running(p, "default") && running(p, "unmasked")
	})
	for name, want := range map[string][]string{
		"default":  {"character special", "1"},
		"unmasked": {"regular", "0"},
	} {
		logs := containerLogs(s.h.LogRoot, got, name)
		if len(logs) == 0 {
			t.Fatalf("container %s: no log", name)
		}
		lines := waitLog(t, logs[0], "/proc/timer_list's type and the /proc/sys mounts", func(l []string) bool { return len(l) >= 2 })
		if !strings.HasPrefix(lines[0], want[0]) || lines[1] != want[1] {
			t.Errorf("container %s (procMount %s): /proc/timer_list is a %q and /proc/sys has %s mounts, want a %s file and %s", name, name, lines[0], lines[1], want[0], want[1])
		}
	}
}
