package kuberuntime

// Reproductions found in review. Each test is skipped with the bug it
// shows; remove the t.Skip once the bug is fixed.

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
// restartPolicy OnFailure a container that exited 0 must never run again
// (the kubelet keeps the newest dead instance of each name through its
// container GC, whatever the sandbox, and computePodActions skips it).
// CollectGarbage here removes every exited container of an older sandbox
// on the sync after the sandbox was recreated, so the plan sees no instance
// of "done" and starts it again as "not started yet".
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
// container whose sandbox is recreated while it is in backoff is not
// started in the recreate sync (backoff), then the next sync's
// CollectGarbage removes its exited instances in the old sandbox: the
// backoff has no last instance to measure from (restart at once) and
// nextAttempt restarts the count at 0 (status restartCount back to 0,
// 0.log reused). The kubelet keeps the dead instance and, when it has
// none, reads the count back from the log directory
// (calcRestartCountByLogDir).
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
// pod-level securityContext.seccompProfile (also appArmorProfile and
// runAsNonRoot) into every container's config, but neither hash covers
// it: ContainerHash hashes the container spec alone, and the sandbox
// config hard-codes a RuntimeDefault seccomp profile and has no
// runAsNonRoot. An edit of these pod fields is silently ignored; the
// issue says manifest edits are never ignored (the kubelet's edited static
// pod gets a new UID, so it always re-runs).
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

// TestReviewHostResolvConfChangeDoesNotRecreateSandboxes: the sandbox hash
// covers the whole generated PodSandboxConfig, including DnsConfig, which
// for the default dnsPolicy (no cluster DNS) is a copy of the host's
// resolv.conf read once at agent start (cmd/crib/agent.go). After the host's
// resolv.conf changes (DHCP, VPN) an agent restart sees every adopted
// sandbox as "pod-level spec changed" and kills and recreates every pod,
// init containers and all. The kubelet's podSandboxChanged never looks at
// DNS. The same happens on a crib upgrade that changes anything podconfig
// writes into a sandbox config.
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

// TestReviewSidecarInitContainerLetsAppsStart: an init container with
// restartPolicy: Always (a native sidecar, GA in Kubernetes 1.33) is
// accepted by source and handled by status and prober, but plan.progress
// treats a running init container as "wait for it to finish": the app
// containers never start and the pod stays Init:0/1 forever. The kubelet
// starts the next init container (or the apps) once a sidecar has started
// (startup probe passed), and restarts an exited sidecar whatever the pod's
// restartPolicy.
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
