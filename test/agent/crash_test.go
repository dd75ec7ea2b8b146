package agenttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
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

	"github.com/crib-dev/crib/internal/agent/status"
	"github.com/crib-dev/crib/internal/testutil"
)

// stubbornForever keeps a container running and ignores SIGTERM, so that
// only the grace period's SIGKILL ends it.
const stubbornForever = "trap '' TERM; while true; do sleep 1; done"

// TestAgentKilledWithInProcessRuntime kills `crib agent` -- the agent and
// crib's runtime in one process, the default deployment -- with SIGKILL
// while it runs a ready pod and a crash-looping one. The containers live
// on under their monitors; a new `crib agent` adopts the ready pod as it
// was and carries the crash loop on. Removing the manifest then tears
// everything down, and nothing of crib is left once the agent stops.
func TestAgentKilledWithInProcessRuntime(t *testing.T) {
	a := newCribAgent(t)
	long := a.hostPod("long", "app", sleepForever)
	long.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: execAction("true")},
		PeriodSeconds: 1,
	}
	crash := a.hostPod("crash", "app", "exit 1")
	crash.Spec.RestartPolicy = corev1.RestartPolicyAlways
	a.writeObjects(t, "pods.yaml", long, crash)
	a.start(t)

	before := a.waitPods(t, "long running and ready, crash restarted", 2*longWait, func(pods map[string]*corev1.Pod) bool {
		return running(pods["long"], "app") && condition(pods["long"], corev1.PodReady) == corev1.ConditionTrue &&
			restarts(pods["crash"], "app") >= 1
	})
	longBefore := *containerStatus(before["long"], "app")
	crashBefore := restarts(before["crash"], "app")
	longUID := string(before["long"].UID)
	sandboxesBefore := readySandboxes(a.sandboxes(t, longUID))
	pid := a.containerPid(t, longBefore.ContainerID)

	a.kill9(t)
	if err := alive(pid); err != nil {
		t.Fatalf("the long pod's container (pid %d) did not outlive the agent: %v", pid, err)
	}
	t.Logf("container pid %d survived the agent; its parent is %s", pid, parentOf(pid))

	a.start(t)
	// Two more restarts: the new agent's first and one after its own
	// backoff.
	after := a.waitPods(t, "long ready again, crash restarted twice by the new agent", 2*longWait, func(pods map[string]*corev1.Pod) bool {
		if p := pods["crash"]; p != nil && restarts(p, "app") < crashBefore {
			t.Fatalf("crash: restart count went from %d to %d across the agent's SIGKILL", crashBefore, restarts(p, "app"))
		}
		return running(pods["long"], "app") && condition(pods["long"], corev1.PodReady) == corev1.ConditionTrue &&
			restarts(pods["crash"], "app") >= crashBefore+2
	})
	t.Logf("crash: %d restarts before the SIGKILL, %d after", crashBefore, restarts(after["crash"], "app"))
	longAfter := containerStatus(after["long"], "app")
	if longAfter.ContainerID != longBefore.ContainerID || longAfter.RestartCount != 0 ||
		!longAfter.State.Running.StartedAt.Equal(&longBefore.State.Running.StartedAt) {
		t.Errorf("long: was %s started %v restarts %d; after the SIGKILL %s started %v restarts %d",
			longBefore.ContainerID, longBefore.State.Running.StartedAt, longBefore.RestartCount,
			longAfter.ContainerID, longAfter.State.Running.StartedAt, longAfter.RestartCount)
	}
	if string(after["long"].UID) != longUID {
		t.Errorf("long: UID %s became %s", longUID, after["long"].UID)
	}
	if got := readySandboxes(a.sandboxes(t, longUID)); len(got) != 1 || got[0] != sandboxesBefore[0] {
		t.Errorf("long: ready sandboxes %v after the SIGKILL, want %v", got, sandboxesBefore)
	}
	if got := a.containerPid(t, longBefore.ContainerID); got != pid {
		t.Errorf("long: the runtime reports pid %d after the SIGKILL, was %d", got, pid)
	}
	if n := len(a.containers(t, longUID)); n != 1 {
		t.Errorf("long: the runtime holds %d containers, want 1", n)
	}

	a.removeFile(t, "pods.yaml")
	a.assertTornDown(t)
	a.stopAndCheckLeaks(t)
}

// TestAgentKilledMidTeardown kills `crib agent` with SIGKILL while it waits
// out the grace period of a container that ignores SIGTERM, whose manifest
// was removed. The next `crib agent` finishes the teardown, and nothing of
// crib is left.
func TestAgentKilledMidTeardown(t *testing.T) {
	a := newCribAgent(t)
	pod := a.hostPod("stubborn", "app", stubbornForever)
	grace := int64(30)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	a.writeObjects(t, "stubborn.yaml", pod)
	a.start(t)
	p := a.waitPods(t, "stubborn running", longWait, func(pods map[string]*corev1.Pod) bool {
		return running(pods["stubborn"], "app")
	})["stubborn"]
	id := containerStatus(p, "app").ContainerID
	pid := a.containerPid(t, id)

	a.removeFile(t, "stubborn.yaml")
	a.waitPods(t, "stubborn terminating", shortWait, func(pods map[string]*corev1.Pod) bool {
		return pods["stubborn"] == nil || pods["stubborn"].DeletionTimestamp != nil
	})
	// The agent is now stopping the container (the status API lists the
	// pod until its teardown is done); the grace period is far from over a
	// second later.
	time.Sleep(time.Second)
	st, err := a.rt.ContainerStatus(rpcCtx(t), trimScheme(id), false)
	if err != nil {
		t.Fatalf("status of the stubborn container mid-grace: %v", err)
	}
	if s := st.GetStatus().GetState(); s != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("the stubborn container is %s one second into a %d s grace period", s, grace)
	}

	a.kill9(t)
	if err := alive(pid); err != nil {
		t.Logf("the stubborn container (pid %d) did not outlive the agent: %v", pid, err)
	}
	a.start(t)
	begin := time.Now()
	a.assertTornDown(t)
	t.Logf("the new agent finished the teardown in %s", time.Since(begin).Round(time.Second))
	a.stopAndCheckLeaks(t)
}

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
	status     *status.Client
	cmd        *exec.Cmd
	done       chan struct{}
	waitErr    error
	rt         internalapi.RuntimeService
	uids       map[string]bool
	clean      bool
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
		StatusAddr:   freeAddr(t),
		image:        img.Ref,
		uids:         map[string]bool{},
	}
	a.status = status.NewClient("http://" + a.StatusAddr)
	t.Cleanup(a.cleanup)
	for _, d := range []string{a.Manifests, a.AgentRoot, a.LogRoot} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := linkOrCopy(crib, a.Binary); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.Config, a.configTOML(img), 0o644); err != nil {
		t.Fatal(err)
	}
	if img.Tarball != "" {
		out, err := exec.Command(a.Binary, "image", "load", "--config", a.Config, img.Tarball).CombinedOutput()
		if err != nil {
			t.Fatalf("crib image load %s: %v\n%s", img.Tarball, err, out)
		}
	}
	return a
}

// configTOML is the runtime's configuration. The pods use the host
// network, so the CNI network is configured but never set up.
func (a *cribAgent) configTOML(img testutil.TestImage) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "root = %q\nstate = %q\nsocket = %q\nlog_level = \"debug\"\ncgroup_parent = %q\n",
		a.Root, a.State, a.Socket, a.CgroupParent)
	fmt.Fprintf(&b, "\n[network]\nconf_dir = %q\nname = \"crib-crash-test\"\n", filepath.Join(a.Dir, "cni"))
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

// assertTornDown waits until the agent lists no pod, the runtime holds no
// sandbox or container, the agent's pod directories and the pod log root
// are empty, and no pod cgroup of the pods seen is left.
func (a *cribAgent) assertTornDown(t *testing.T) {
	t.Helper()
	a.waitPods(t, "no pods listed", teardownWait, func(pods map[string]*corev1.Pod) bool { return len(pods) == 0 })
	deadline := time.Now().Add(teardownWait)
	for {
		left := a.leftovers()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after the manifests went, still left: %v", teardownWait, left)
		}
		time.Sleep(pollEvery)
	}
}

// leftovers are what the runtime, the agent's directories and the pod
// cgroups still hold.
func (a *cribAgent) leftovers() []string {
	var out []string
	ctx, cancel := context.WithTimeout(context.Background(), criTimeout)
	defer cancel()
	if sbs, err := a.rt.ListPodSandbox(ctx, nil); err != nil {
		out = append(out, "list sandboxes: "+err.Error())
	} else {
		for _, s := range sbs {
			out = append(out, fmt.Sprintf("sandbox %s of %s (%s)", s.Id, s.GetMetadata().GetName(), s.State))
		}
	}
	if ctrs, err := a.rt.ListContainers(ctx, nil); err != nil {
		out = append(out, "list containers: "+err.Error())
	} else {
		for _, c := range ctrs {
			out = append(out, fmt.Sprintf("container %s (%s, %s)", c.Id, c.GetMetadata().GetName(), c.State))
		}
	}
	for _, dir := range []string{filepath.Join(a.AgentRoot, "pods"), a.LogRoot} {
		entries, err := os.ReadDir(dir)
		if err != nil && !os.IsNotExist(err) {
			out = append(out, err.Error())
		}
		for _, e := range entries {
			out = append(out, "directory "+filepath.Join(dir, e.Name()))
		}
	}
	for _, c := range a.podCgroups() {
		out = append(out, "cgroup "+c)
	}
	return out
}

// podCgroups are the cgroups of the pods seen, in every hierarchy, where
// the cgroupfs driver puts them: /<CgroupRoot>[/<qos>]/pod<uid>.
func (a *cribAgent) podCgroups() []string {
	var out []string
	for uid := range a.uids {
		for _, qos := range []string{"", "besteffort", "burstable"} {
			matches, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", a.CgroupRoot, qos, "pod"+uid))
			out = append(out, matches...)
		}
	}
	sort.Strings(out)
	return out
}

// stopAndCheckLeaks stops the agent with SIGTERM and checks that nothing
// of crib is left (testutil's leak check): no process of its binary or
// naming its directories (monitors included), no mount under its
// directories (/proc/self/mountinfo), no runc container, no cgroup under
// its cgroup parent, no sandbox or container directory.
func (a *cribAgent) stopAndCheckLeaks(t *testing.T) {
	t.Helper()
	if err := a.stop(); err != nil {
		t.Error(err)
	}
	leaks := a.waitNoLeaks()
	for _, l := range leaks {
		t.Errorf("leak: %s", l)
	}
	if len(leaks) == 0 && !t.Failed() {
		a.clean = true
	}
}

// leakCheck describes the agent's runtime for testutil's leak check.
func (a *cribAgent) leakCheck() *testutil.Daemon {
	return &testutil.Daemon{Dir: a.Dir, Root: a.Root, State: a.State, Socket: a.Socket,
		Binary: a.Binary, CgroupParent: a.CgroupParent, Bridge: "crib-crash-test"}
}

// waitNoLeaks gives processes that were just told to quit a few seconds.
func (a *cribAgent) waitNoLeaks() []string {
	deadline := time.Now().Add(10 * time.Second)
	for {
		leaks := a.leakCheck().Leaks()
		if len(leaks) == 0 || time.Now().After(deadline) {
			return leaks
		}
		time.Sleep(pollEvery)
	}
}

// cleanup drains what the test left (starting the agent again with no
// manifests when needed), stops the agent, removes leaks by force and the
// pods' cgroups, and removes the directories.
func (a *cribAgent) cleanup() {
	t := a.t
	if !a.clean && a.done != nil {
		entries, _ := os.ReadDir(a.Manifests)
		for _, e := range entries {
			_ = os.Remove(filepath.Join(a.Manifests, e.Name()))
		}
		if !a.running() {
			if err := a.startErr(); err != nil {
				t.Errorf("cleanup: start crib agent to tear the pods down: %v", err)
			}
		}
		if a.running() && a.rt != nil {
			deadline := time.Now().Add(teardownWait)
			for len(a.leftovers()) > 0 && time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
			}
		}
		if err := a.stop(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
	if leaks := a.waitNoLeaks(); len(leaks) > 0 {
		if !t.Failed() {
			t.Errorf("cleanup: leaks %v", leaks)
		}
		if err := a.leakCheck().ForceClean(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
	for _, c := range a.podCgroups() {
		if err := removeCgroupDir(c); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
	// Then the agent's root and QoS cgroups, the test's own.
	hierarchies, _ := os.ReadDir("/sys/fs/cgroup")
	for _, h := range hierarchies {
		base := filepath.Join("/sys/fs/cgroup", h.Name(), a.CgroupRoot)
		for _, d := range []string{filepath.Join(base, "besteffort"), filepath.Join(base, "burstable"), base} {
			_ = os.Remove(d)
		}
	}
	if t.Failed() {
		t.Logf("crib agent log (tail):\n%s", a.logTail())
	}
	if err := os.RemoveAll(a.Dir); err != nil {
		t.Errorf("cleanup: %v", err)
	}
}

func (a *cribAgent) logTail() string {
	b, err := os.ReadFile(a.Log)
	if err != nil {
		return err.Error()
	}
	const max = 200 << 10
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// removeCgroupDir kills what runs in a cgroup and its children and removes
// them, deepest first.
func removeCgroupDir(dir string) error {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		deadline := time.Now().Add(5 * time.Second)
		for {
			procs, _ := os.ReadFile(filepath.Join(dirs[i], "cgroup.procs"))
			for _, f := range strings.Fields(string(procs)) {
				if pid, err := strconv.Atoi(f); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			err := os.Remove(dirs[i])
			if err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dirs[i], err))
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return errors.Join(errs...)
}

// alive checks that pid runs and is not a zombie.
func alive(pid int) error {
	if err := syscall.Kill(pid, 0); err != nil {
		return err
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return err
	}
	if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return errors.New("zombie")
	}
	return nil
}

// parentOf describes pid's parent process, for the log.
func parentOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			ppid := strings.TrimSpace(v)
			cmdline, _ := os.ReadFile("/proc/" + ppid + "/cmdline")
			return ppid + " (" + strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " ")) + ")"
		}
	}
	return "unknown"
}

// freeAddr is a loopback TCP address free at the time of the call.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// linkOrCopy makes dst the same file as src.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copy crib binary: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return fmt.Errorf("copy crib binary: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy crib binary: %w", err)
	}
	return out.Close()
}
