package agenttest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"

	"github.com/crib-dev/crib/internal/agent/statusapi"
	"github.com/crib-dev/crib/internal/testutil"
)

// cribAgent is `crib agent` run as a child process, with crib's runtime in
// it, on directories of its own under Dir.
type cribAgent struct {
	t *testing.T
	// Dir holds everything: the binary (a link to BuildCrib's, so that its
	// processes can be told apart), config, log, the runtime's root and
	// state, manifests, agent root and pod log root.
	Dir, Binary, Config, Log          string
	Root, State, Socket, CgroupParent string
	Manifests, AgentRoot, LogRoot     string
	// CgroupRoot is where the agent makes pod cgroups (--cgroup-root).
	CgroupRoot string
	StatusAddr string
	image      string
	status     *statusapi.Client
	cmd        *exec.Cmd
	done       chan struct{}
	waitErr    error
	rt         internalapi.RuntimeService
	uids       map[string]bool
	clean      bool

	// Network is the runtime's CNI network name; with a pod network
	// (usePodNetwork) it is also the bridge, and Subnet its pod CIDR.
	Network, Subnet string
	releaseNetwork  func() error
}

// newCribAgent prepares the directories, config and image of a `crib
// agent`; start runs it. At cleanup the agent drains and stops, leaks are
// reported and removed by force, and the directories go.
func newCribAgent(t *testing.T) *cribAgent {
	t.Helper()
	testutil.RequiresRoot(t)
	if os.Getenv(EndpointEnv) != "" {
		t.Skipf("%s is set: this test runs crib's in-process runtime only", EndpointEnv)
	}
	crib := testutil.BuildCrib(t)
	img := testutil.Busybox(t)
	// Unix socket paths are limited to 108 bytes: t.TempDir() is too long.
	dir, err := os.MkdirTemp("/tmp", "crib-it-")
	if err != nil {
		t.Fatal(err)
	}
	a := &cribAgent{
		t:            t,
		Dir:          dir,
		Binary:       filepath.Join(dir, "crib"),
		Config:       filepath.Join(dir, "crib.toml"),
		Log:          filepath.Join(dir, "agent.log"),
		Root:         filepath.Join(dir, "root"),
		State:        filepath.Join(dir, "state"),
		Socket:       filepath.Join(dir, "state", "crib.sock"),
		CgroupParent: "/" + filepath.Base(dir),
		CgroupRoot:   filepath.Base(dir) + "-pods",
		Manifests:    filepath.Join(dir, "manifests"),
		AgentRoot:    filepath.Join(dir, "agent"),
		LogRoot:      filepath.Join(dir, "logs"),
		Network:      "crib-crash-test",
		StatusAddr:   freeAddr(t),
		image:        img.Ref,
		uids:         map[string]bool{},
	}
	a.status = statusapi.NewClient("http://" + a.StatusAddr)
	t.Cleanup(a.cleanup)
	for _, d := range []string{a.Manifests, a.AgentRoot, a.LogRoot} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The root of a pod in its own user namespace reaches its rootfs and
	// the pod's files through here.
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := testutil.LinkCrib(crib, a.Binary); err != nil {
		t.Fatal(err)
	}
	a.writeConfig(t, img)
	if img.Tarball != "" {
		out, err := exec.Command(a.Binary, "image", "load", "--config", a.Config, img.Tarball).CombinedOutput()
		if err != nil {
			t.Fatalf("crib image load %s: %v\n%s", img.Tarball, err, out)
		}
	}
	return a
}

func (a *cribAgent) writeConfig(t *testing.T, img testutil.TestImage) {
	t.Helper()
	if err := os.WriteFile(a.Config, a.configTOML(img), 0o644); err != nil {
		t.Fatal(err)
	}
}

// usePodNetwork gives the runtime a CNI network of its own, a test
// network's bridge and subnet, for pods that cannot use the host's
// (hostUsers: false). Call it before start.
func (a *cribAgent) usePodNetwork(t *testing.T) {
	t.Helper()
	a.Network, a.Subnet, a.releaseNetwork = testutil.ReserveNetwork(t, a.Dir)
	a.writeConfig(t, testutil.Busybox(t))
}

// configTOML is the runtime's configuration. Host-network pods never set
// the CNI network up; with usePodNetwork it is a bridge of its own.
func (a *cribAgent) configTOML(img testutil.TestImage) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "root = %q\nstate = %q\nsocket = %q\nlog_level = \"debug\"\ncgroup_parent = %q\n",
		a.Root, a.State, a.Socket, a.CgroupParent)
	fmt.Fprintf(&b, "\n[network]\nconf_dir = %q\nname = %q\n", filepath.Join(a.Dir, "cni"), a.Network)
	if a.Subnet != "" {
		fmt.Fprintf(&b, "bridge = %q\nsubnet = %q\n", a.Network, a.Subnet)
	}
	hosts := make([]string, 0, len(img.Mirrors))
	for h := range img.Mirrors {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		quoted := make([]string, len(img.Mirrors[h]))
		for i, m := range img.Mirrors[h] {
			quoted[i] = strconv.Quote(m)
		}
		fmt.Fprintf(&b, "\n[registries.%q]\nmirrors = [%s]\n", h, strings.Join(quoted, ", "))
	}
	return []byte(b.String())
}

// hostPod is a host-network pod of one busybox container running script.
func (a *cribAgent) hostPod(name, container, script string) *corev1.Pod {
	pod := podSpec(name, (&runtimeEnv{image: a.image}).shell(container, script))
	pod.Spec.HostNetwork = true
	return pod
}

// start runs `crib agent` and waits until its status API and the
// runtime's socket answer.
func (a *cribAgent) start(t *testing.T) {
	t.Helper()
	if err := a.startErr(); err != nil {
		t.Fatal(err)
	}
}

func (a *cribAgent) startErr() error {
	logf, err := os.OpenFile(a.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== crash test: starting crib agent at %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(a.Binary, "agent", "--config", a.Config, "--manifests", a.Manifests,
		"--pod-log-root", a.LogRoot, "--agent-root", a.AgentRoot, "--status-address", a.StatusAddr,
		"--cgroup-driver", "cgroupfs", "--cgroup-root", a.CgroupRoot)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start crib agent: %w", err)
	}
	done := make(chan struct{})
	a.cmd, a.done = cmd, done
	go func() {
		a.waitErr = cmd.Wait()
		close(done)
	}()
	deadline := time.Now().Add(longWait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := a.status.Pods(ctx)
		cancel()
		if err == nil {
			break
		}
		select {
		case <-done:
			return fmt.Errorf("crib agent exited during start: %v", a.waitErr)
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
			return fmt.Errorf("crib agent's status API did not answer within %s: %v", longWait, err)
		}
		time.Sleep(pollEvery)
	}
	ctx, cancel := context.WithTimeout(context.Background(), shortWait)
	defer cancel()
	rt, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint("unix://" + a.Socket).WithConnectionTimeout(criTimeout).Build(ctx)
	if err != nil {
		return fmt.Errorf("connect to the agent's runtime: %w", err)
	}
	a.rt = rt
	return nil
}

func (a *cribAgent) running() bool {
	if a.done == nil {
		return false
	}
	select {
	case <-a.done:
		return false
	default:
		return true
	}
}

// kill9 kills the agent process alone with SIGKILL.
func (a *cribAgent) kill9(t *testing.T) {
	t.Helper()
	if !a.running() {
		t.Fatal("kill9: crib agent is not running")
	}
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
	a.disconnect()
}

// stop sends SIGTERM and waits for the agent to exit.
func (a *cribAgent) stop() error {
	if !a.running() {
		a.disconnect()
		return nil
	}
	defer a.disconnect()
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(longWait):
		_ = a.cmd.Process.Signal(syscall.SIGKILL)
		<-a.done
		return fmt.Errorf("crib agent did not exit within %s of SIGTERM", longWait)
	}
	if a.waitErr != nil {
		return fmt.Errorf("crib agent exited after SIGTERM: %w", a.waitErr)
	}
	return nil
}

func (a *cribAgent) disconnect() {
	if a.rt != nil {
		_ = a.rt.Close(context.Background())
	}
	a.rt = nil
}

// writeObjects writes a multi-document manifest atomically.
func (a *cribAgent) writeObjects(t *testing.T, file string, objs ...any) {
	t.Helper()
	(&harness{Dir: a.Manifests}).writeObjects(t, file, objs...)
}

func (a *cribAgent) removeFile(t *testing.T, file string) {
	t.Helper()
	if err := os.Remove(filepath.Join(a.Manifests, file)); err != nil {
		t.Fatal(err)
	}
}

// waitPods polls the status API until cond accepts its pods by name, and
// returns them. Errors of the API (an agent starting) count as no answer.
func (a *cribAgent) waitPods(t *testing.T, what string, timeout time.Duration, cond func(map[string]*corev1.Pod) bool) map[string]*corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last map[string]*corev1.Pod
	var lastErr error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		list, err := a.status.Pods(ctx)
		cancel()
		if lastErr = err; err == nil {
			last = map[string]*corev1.Pod{}
			for i := range list.Items {
				p := &list.Items[i]
				last[p.Name] = p
				a.uids[string(p.UID)] = true
			}
			if cond(last) {
				return last
			}
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for name, p := range last {
				fmt.Fprintf(&b, "%s:\n%s", name, describe(p))
			}
			t.Fatalf("%s: not within %s (last error %v); pods:\n%s", what, timeout, lastErr, b.String())
		}
		time.Sleep(pollEvery)
	}
}

func (a *cribAgent) sandboxes(t *testing.T, uid string) []*runtimeapi.PodSandbox {
	t.Helper()
	return (&runtimeEnv{rt: a.rt}).sandboxes(t, uid)
}

func (a *cribAgent) containers(t *testing.T, uid string) []*runtimeapi.Container {
	t.Helper()
	return (&runtimeEnv{rt: a.rt}).containers(t, uid, nil)
}

// containerPid is the pid the runtime reports for a container ID of a pod
// status.
func (a *cribAgent) containerPid(t *testing.T, id string) int {
	t.Helper()
	resp, err := a.rt.ContainerStatus(rpcCtx(t), trimScheme(id), true)
	if err != nil {
		t.Fatalf("container status %s: %v", id, err)
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil || info.Pid <= 0 {
		t.Fatalf("container %s: no pid in verbose status %v (%v)", id, resp.GetInfo(), err)
	}
	return info.Pid
}
