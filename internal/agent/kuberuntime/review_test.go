package kuberuntime

// Regression tests of bugs found in review, all fixed: each drives the case
// that showed its bug and checks that the sync now does what the kubelet
// does.

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sandboxDies makes every ready sandbox of the fake not ready, as a runtime
// restart or a dead pause process does, leaving containers as they are.
func (e *env) sandboxDies() {
	e.t.Helper()
	e.rt.Lock()
	defer e.rt.Unlock()
	for _, s := range e.rt.Sandboxes {
		s.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	}
}

// TestReviewOnFailureSucceededContainerNotRerunAfterSandboxRecreate: with
// restartPolicy OnFailure a container that exited 0 never runs again, not
// even after its sandbox was recreated: CollectGarbage keeps the newest
// instance of each name whatever its sandbox, as the kubelet's container GC
// does, so the plan still sees that "done" succeeded. (It used to remove
// every exited container of an older sandbox, and "done" ran again as
// "not started yet".)
func TestReviewOnFailureSucceededContainerNotRerunAfterSandboxRecreate(t *testing.T) {
	e := newEnv(t)
	pod := testPod(func(p *corev1.Pod) {
		p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		p.Spec.Containers = []corev1.Container{testContainer("done"), testContainer("failing")}
	})
	e.mustSync(pod)
	e.rt.exit(t, e.running(pod, "done").ID, 0, e.clk.Now())
	e.rt.exit(t, e.running(pod, "failing").ID, 1, e.clk.Now())
	e.sandboxDies()

	mark := e.log.len()
	e.mustSync(pod) // new sandbox; only "failing" restarts
	if got := withPrefix(e.log.since(mark), "CreateContainer:done"); len(got) != 0 {
		t.Fatalf("recreate sync reran the succeeded container: %v", got)
	}
	mark = e.log.len()
	e.sync(pod)
	if got := withPrefix(e.log.since(mark), "CreateContainer:done"); len(got) != 0 {
		t.Errorf("the sync after the recreate reran the OnFailure container that exited 0: %v", got)
	}
}

// TestReviewRestartCountAndBackoffSurviveSandboxRecreate: a crash-looping
// container whose sandbox is recreated while it is in backoff stays held
// back until its backoff ends, and then starts as attempt 2: its newest
// exited instance in the old sandbox survives garbage collection, as in
// the kubelet, so the backoff and the restart count go on from it. (They
// used to start over: a restart at once, as attempt 0.)
func TestReviewRestartCountAndBackoffSurviveSandboxRecreate(t *testing.T) {
	e := newEnv(t)
	pod := testPod()
	e.mustSync(pod)
	e.rt.exit(t, e.running(pod, "app").ID, 1, e.clk.Now())
	e.mustSync(pod) // first crash: restarted at once as attempt 1
	e.rt.exit(t, e.running(pod, "app").ID, 1, e.clk.Now())
	// Second crash: in backoff for 10s. The sandbox dies meanwhile.
	e.sandboxDies()
	e.clk.Step(time.Second)
	mark := e.log.len()
	e.sync(pod) // new sandbox, app held back
	if got := withPrefix(e.log.since(mark), "CreateContainer"); len(got) != 0 {
		t.Fatalf("recreate sync started app inside its backoff: %v", got)
	}
	e.clk.Step(time.Second)
	mark = e.log.len()
	e.sync(pod)
	got := withPrefix(e.log.since(mark), "CreateContainer")
	if len(got) != 0 {
		t.Errorf("2s into a 10s backoff the app was created: %v (want none; and its attempt must be 2, not 0)", got)
	}
	e.clk.Step(10 * time.Second)
	mark = e.log.len()
	e.sync(pod)
	if got, want := withPrefix(e.log.since(mark), "CreateContainer"), []string{"CreateContainer:app:2"}; !cmp.Equal(got, want) {
		t.Errorf("past the backoff creates = %v, want %v (the restart count goes on)", got, want)
	}
}

// TestReviewPodLevelSecurityEditRestartsContainers: podconfig copies the
// pod-level securityContext (seccompProfile, appArmorProfile, runAsNonRoot,
// ...) into every container's config, and plan.ContainerHash covers it, so
// an edit of it restarts the containers, as the kubelet's edited static pod
// (a new UID) re-runs. (The hash used to cover the container spec alone,
// and such an edit was ignored.)
func TestReviewPodLevelSecurityEditRestartsContainers(t *testing.T) {
	e := newEnv(t)
	pod := testPod()
	e.mustSync(pod)
	old := e.running(pod, "app")

	edited := pod.DeepCopy()
	edited.Spec.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	mark := e.log.len()
	e.mustSync(edited)
	if got := withPrefix(e.log.since(mark), "StopContainer:"+old.ID); len(got) == 0 {
		t.Errorf("pod-level seccompProfile edit did not restart the container; calls %v", e.log.since(mark))
	}
}

// TestReviewHostResolvConfChangeDoesNotRecreateSandboxes: for the default
// dnsPolicy (no cluster DNS) a sandbox's DnsConfig is a copy of the host's
// resolv.conf, read once at agent start (cmd/crib/agent.go). An agent that
// restarts after the host's resolv.conf changed (DHCP, VPN) keeps the pods'
// sandboxes: the sandbox hash is made from the pod alone, without the
// host's DNS and addresses, and the kubelet's podSandboxChanged never looks
// at DNS either. (The hash used to cover them, and every pod was
// recreated.)
func TestReviewHostResolvConfChangeDoesNotRecreateSandboxes(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.PodConfig.HostDNS = &runtimeapi.DNSConfig{Servers: []string{"192.0.2.1"}, Searches: []string{"lan"}}
	})
	pod := testPod()
	e.mustSync(pod)

	// The agent restarts after the host's resolver changed.
	cfg := e.m.cfg
	cfg.PodConfig.HostDNS = &runtimeapi.DNSConfig{Servers: []string{"192.0.2.53"}, Searches: []string{"lan"}}
	e.m = New(cfg)
	mark := e.log.len()
	e.mustSync(pod)
	if got := withPrefix(e.log.since(mark), "RunPodSandbox"); len(got) != 0 {
		t.Errorf("adopted pod got a new sandbox after a resolv.conf change: %v", e.log.since(mark))
	}
}

// TestReviewSidecarInitContainerLetsAppsStart: beside a running init
// container with restartPolicy: Always (a native sidecar, GA in Kubernetes
// 1.33) the app containers start, as the kubelet starts the next init
// container or the apps once a sidecar has started. (The plan used to wait
// for it to finish, and the pod stayed Init:0/1.)
func TestReviewSidecarInitContainerLetsAppsStart(t *testing.T) {
	e := newEnv(t)
	always := corev1.ContainerRestartPolicyAlways
	pod := testPod(func(p *corev1.Pod) {
		side := testContainer("sidecar")
		side.RestartPolicy = &always
		p.Spec.InitContainers = []corev1.Container{side}
	})
	e.mustSync(pod)
	e.running(pod, "sidecar")
	mark := e.log.len()
	e.mustSync(pod)
	if got := withPrefix(e.log.since(mark), "CreateContainer:app"); len(got) != 1 {
		t.Errorf("app containers not started beside a running sidecar: %v", e.log.since(mark))
	}
}
