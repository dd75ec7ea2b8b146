package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// env is one test's daemon and image.
type env struct {
	t   *testing.T
	d   *testutil.Daemon
	img testutil.TestImage
}

// newEnv starts a daemon with the busybox image; the test runs in
// parallel with the other top-level tests, each on its own daemon.
func newEnv(t *testing.T) *env {
	t.Helper()
	testutil.RequiresRoot(t)
	t.Parallel()
	img := testutil.Busybox(t)
	d := testutil.StartDaemon(t, testutil.Options{Image: &img})
	return &env{t: t, d: d, img: img}
}

// ctx bounds one step of a test.
func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}

func (e *env) rt() runtimeapi.RuntimeServiceClient { return e.d.Runtime }

// podConfig is a pod named name with its own namespaces (PID per
// container, as the kubelet asks unless the pod shares its process
// namespace: POD is the enum's zero value) and a log directory under the
// daemon's.
func (e *env) podConfig(name string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "it", Uid: "uid-" + name},
		Hostname:     name + "-host",
		LogDirectory: filepath.Join(e.d.LogDir, name),
		Labels:       map[string]string{"pod": name},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
		}},
	}
}

func (e *env) runPod(cfg *runtimeapi.PodSandboxConfig) string {
	e.t.Helper()
	resp, err := e.rt().RunPodSandbox(e.ctx(), &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		e.t.Fatalf("RunPodSandbox %s: %v", cfg.GetMetadata().GetName(), err)
	}
	return resp.PodSandboxId
}

// ctrConfig is a busybox container running cmd in its own PID namespace,
// logging to <name>.log.
func (e *env) ctrConfig(name string, cmd ...string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: e.img.Ref},
		Command:  cmd,
		LogPath:  name + ".log",
		Labels:   map[string]string{"name": name},
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
		}},
	}
}

func (e *env) create(podID string, pod *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) string {
	e.t.Helper()
	resp, err := e.rt().CreateContainer(e.ctx(), &runtimeapi.CreateContainerRequest{
		PodSandboxId: podID, Config: cfg, SandboxConfig: pod,
	})
	if err != nil {
		e.t.Fatalf("CreateContainer %s: %v", cfg.GetMetadata().GetName(), err)
	}
	return resp.ContainerId
}

func (e *env) start(id string) {
	e.t.Helper()
	if _, err := e.rt().StartContainer(e.ctx(), &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		e.t.Fatalf("StartContainer %s: %v", id, err)
	}
}

// run creates and starts a container.
func (e *env) run(podID string, pod *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) string {
	e.t.Helper()
	id := e.create(podID, pod, cfg)
	e.start(id)
	return id
}

func (e *env) status(id string) *runtimeapi.ContainerStatus {
	e.t.Helper()
	resp, err := e.rt().ContainerStatus(e.ctx(), &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		e.t.Fatalf("ContainerStatus %s: %v", id, err)
	}
	return resp.Status
}

// waitState polls ContainerStatus until the container is in state.
func (e *env) waitState(id string, state runtimeapi.ContainerState, within time.Duration) *runtimeapi.ContainerStatus {
	e.t.Helper()
	within = testutil.Patience(within)
	deadline := time.Now().Add(within)
	for {
		st := e.status(id)
		if st.State == state {
			return st
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("container %s is %s after %s, want %s (reason %q, message %q)", id, st.State, within, state, st.Reason, st.Message)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// exec runs cmd with ExecSync and fails the test on an RPC error.
func (e *env) exec(id string, cmd ...string) *runtimeapi.ExecSyncResponse {
	e.t.Helper()
	resp, err := e.rt().ExecSync(e.ctx(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: 20})
	if err != nil {
		e.t.Fatalf("ExecSync %v in %s: %v", cmd, id, err)
	}
	return resp
}

// eventually polls cond until it holds, failing with what after within.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	within = testutil.Patience(within)
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitLog polls the file until it contains s and returns its content.
func waitLog(t *testing.T, path, s string, within time.Duration) string {
	t.Helper()
	var data []byte
	eventually(t, within, "log "+path+" to contain "+s, func() bool {
		data, _ = os.ReadFile(path)
		return strings.Contains(string(data), s)
	})
	return string(data)
}

// wrapRunc restarts the daemon with its runc handler running a shell
// script named name that runs prelude (sh, with runc's arguments as "$@"),
// then execs the runc of PATH, set through a drop-in of the daemon's config.
// Without runc in PATH the test is skipped.
func (e *env) wrapRunc(name, prelude string) {
	e.t.Helper()
	runc, err := exec.LookPath("runc")
	if err != nil {
		e.t.Skip("needs runc")
	}
	wrapper := filepath.Join(e.d.Dir, name)
	script := fmt.Sprintf("#!/bin/sh\n%s\nexec %s \"$@\"\n", prelude, runc)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		e.t.Fatal(err)
	}
	dropIns := strings.TrimSuffix(e.d.Config, ".toml") + ".d"
	if err := os.MkdirAll(dropIns, 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dropIns, "50-"+name+".toml"), fmt.Appendf(nil, "[runtimes.runc]\npath = %q\n", wrapper), 0o644); err != nil {
		e.t.Fatal(err)
	}
	e.d.Restart(e.t)
}
