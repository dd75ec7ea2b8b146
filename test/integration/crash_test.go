package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// These tests SIGKILL the daemon while a creation is in flight. Where the
// kill lands (before the request arrives, in the middle of the work, or
// after the reply) is up to the scheduler: the delays only spread the
// attempts. Whatever happened, the restarted daemon must show only objects
// that work or can be removed, and removing them must leave nothing on the
// machine.

// crashDelays are how long after issuing a request the daemon is killed:
// the first milliseconds, then spread over took, how long the same request
// took without a crash, and past it.
func crashDelays(took time.Duration) []time.Duration {
	out := []time.Duration{0, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond}
	fractions := []float64{0.25, 0.5, 0.7, 0.85, 1, 1.5}
	if testing.Short() {
		// Under emulation (the VM suite) a kill and restart takes seconds;
		// TestFailpoints kills at every named step there already.
		out, fractions = out[:1], []float64{0.5, 1}
	}
	for _, f := range fractions {
		out = append(out, time.Duration(f*float64(took)))
	}
	return out
}

// rpcResult is what an in-flight request returned.
type rpcResult struct {
	id  string
	err error
}

// crashDuring runs call in a goroutine, SIGKILLs the daemon after delay,
// waits for the call to return, and starts the daemon again.
func (e *env) crashDuring(delay time.Duration, call func(ctx context.Context, rt runtimeapi.RuntimeServiceClient) rpcResult) rpcResult {
	e.t.Helper()
	rt := e.rt()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan rpcResult, 1)
	go func() { done <- call(ctx, rt) }()
	time.Sleep(delay)
	e.d.Kill9(e.t)
	res := <-done
	e.d.Restart(e.t)
	return res
}

func TestCrashDuringRunPodSandbox(t *testing.T) {
	e := newEnv(t)
	podConfig := func(name string, sharedPID bool) *runtimeapi.PodSandboxConfig {
		cfg := e.podConfig(name)
		if sharedPID {
			// The pod gets a pause process.
			cfg.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_POD
		}
		return cfg
	}
	start := time.Now()
	e.runPod(podConfig("crash-calibrate", true))
	took := time.Since(start)
	e.removeAllAndCheck(t)
	t.Logf("RunPodSandbox took %s without a crash", took)

	for i, delay := range crashDelays(took) {
		name := fmt.Sprintf("crash-pod-%d", i)
		cfg := podConfig(name, i%3 != 0)
		res := e.crashDuring(delay, func(ctx context.Context, rt runtimeapi.RuntimeServiceClient) rpcResult {
			resp, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
			return rpcResult{resp.GetPodSandboxId(), err}
		})
		t.Logf("kill after %s: RunPodSandbox %s = %.12s, %v", delay, name, res.id, res.err)

		pods, err := e.rt().ListPodSandbox(e.ctx(), &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			t.Fatalf("ListPodSandbox after restart: %v", err)
		}
		listed := false
		for _, p := range pods.Items {
			if p.Metadata.GetName() != name {
				t.Errorf("unexpected pod %s (%s) after restart", p.Metadata.GetName(), p.Id)
				continue
			}
			listed = true
			st, err := e.rt().PodSandboxStatus(e.ctx(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: p.Id})
			if err != nil {
				t.Errorf("PodSandboxStatus %s after restart: %v", p.Id, err)
				continue
			}
			if res.id != "" && (p.Id != res.id || st.Status.State != runtimeapi.PodSandboxState_SANDBOX_READY) {
				t.Errorf("pod %s was reported created as %s; after restart it is %s %s", name, res.id, p.Id, st.Status.State)
			}
			if st.Status.State == runtimeapi.PodSandboxState_SANDBOX_READY {
				e.podWorks(p.Id, cfg)
			}
		}
		if res.id != "" && !listed {
			t.Errorf("pod %s (%s) was reported created but is gone after the restart", name, res.id)
		}
		// The kubelet retries a creation it got no answer for.
		retry, err := e.rt().RunPodSandbox(e.ctx(), &runtimeapi.RunPodSandboxRequest{Config: cfg})
		switch {
		case listed && status.Code(err) != codes.AlreadyExists:
			t.Errorf("retry of RunPodSandbox %s while it exists: %v, want AlreadyExists", name, err)
		case !listed && err != nil:
			t.Errorf("retry of RunPodSandbox %s after a rolled back attempt: %v", name, err)
		case !listed:
			e.podWorks(retry.PodSandboxId, cfg)
		}
		e.removeAllAndCheck(t)
	}
}

func TestCrashDuringCreateAndStartContainer(t *testing.T) {
	e := newEnv(t)
	cfg := e.ctrConfig("c", "sh", "-c", "echo up; sleep 3600")
	pod := e.podConfig("crash-calibrate")
	podID := e.runPod(pod)
	start := time.Now()
	e.run(podID, pod, cfg)
	took := time.Since(start)
	e.removeAllAndCheck(t)
	t.Logf("CreateContainer and StartContainer took %s without a crash", took)

	for i, delay := range crashDelays(took) {
		pod := e.podConfig(fmt.Sprintf("crash-ctr-%d", i))
		podID := e.runPod(pod)
		var created string
		res := e.crashDuring(delay, func(ctx context.Context, rt runtimeapi.RuntimeServiceClient) rpcResult {
			resp, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: pod})
			if err != nil {
				return rpcResult{err: fmt.Errorf("create: %w", err)}
			}
			created = resp.ContainerId
			_, err = rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: resp.ContainerId})
			if err != nil {
				return rpcResult{err: fmt.Errorf("start: %w", err)}
			}
			return rpcResult{id: resp.ContainerId}
		})
		t.Logf("kill after %s: created %.12s started %.12s: %v", delay, created, res.id, res.err)

		if st, err := e.rt().PodSandboxStatus(e.ctx(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: podID}); err != nil ||
			st.Status.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			t.Errorf("pod after restart: %v, %v; want READY", st.GetStatus().GetState(), err)
		}
		ctrs, err := e.rt().ListContainers(e.ctx(), &runtimeapi.ListContainersRequest{})
		if err != nil {
			t.Fatalf("ListContainers after restart: %v", err)
		}
		listed := false
		for _, c := range ctrs.Containers {
			if c.PodSandboxId != podID {
				t.Errorf("unexpected container %s of pod %s after restart", c.Id, c.PodSandboxId)
				continue
			}
			listed = true
			if created != "" && c.Id != created {
				t.Errorf("container %s after restart, but %s was reported created", c.Id, created)
			}
			e.containerWorks(c.Id, res.id != "")
		}
		if created != "" && !listed {
			t.Errorf("container %s was reported created but is gone after the restart", created)
		}
		if !listed {
			// The attempt was rolled back: the kubelet's retry works.
			e.containerWorks(e.create(podID, pod, cfg), false)
		}
		e.removeAllAndCheck(t)
	}
}

// podWorks checks that a ready pod can run a container.
func (e *env) podWorks(podID string, pod *runtimeapi.PodSandboxConfig) {
	e.t.Helper()
	id := e.run(podID, pod, e.ctrConfig("probe", "sleep", "3600"))
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	if out := e.exec(id, "hostname"); string(out.Stdout) != pod.Hostname+"\n" {
		e.t.Errorf("hostname in pod %s = %q, want %q", pod.Metadata.Name, out.Stdout, pod.Hostname)
	}
}

// containerWorks checks a container found after a restart: a created one
// starts, a running one execs. One reported started must be running.
func (e *env) containerWorks(id string, started bool) {
	e.t.Helper()
	st := e.status(id)
	e.t.Logf("container %.12s after restart: %s (reason %q)", id, st.State, st.Reason)
	switch st.State {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		if started {
			e.t.Errorf("container %s was reported started, but is CREATED after the restart", id)
		}
		e.start(id)
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
	default:
		e.t.Errorf("container %s after restart: %s (reason %q, message %q), want CREATED or RUNNING", id, st.State, st.Reason, st.Message)
		return
	}
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	if out := e.exec(id, "echo", "alive"); string(out.Stdout) != "alive\n" {
		e.t.Errorf("ExecSync in %s = %q", id, out.Stdout)
	}
	waitLog(e.t, e.status(id).LogPath, "up\n", 10*time.Second)
}
