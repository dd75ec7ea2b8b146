package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// nriLogger records every event it gets, as "Event name" lines, the name
// being the container's (or the pod's for pod events).
type nriLogger struct {
	mu     sync.Mutex
	events []string
	synced []string
}

func (l *nriLogger) add(ev, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev+" "+name)
}

func (l *nriLogger) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

func (l *nriLogger) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range pods {
		l.synced = append(l.synced, "pod "+p.GetName())
	}
	for _, c := range ctrs {
		l.synced = append(l.synced, "container "+c.GetName()+" "+c.GetState().String())
	}
	return nil, nil
}
func (l *nriLogger) RunPodSandbox(_ context.Context, p *api.PodSandbox) error {
	l.add("RunPodSandbox", p.GetName())
	return nil
}
func (l *nriLogger) StopPodSandbox(_ context.Context, p *api.PodSandbox) error {
	l.add("StopPodSandbox", p.GetName())
	return nil
}
func (l *nriLogger) RemovePodSandbox(_ context.Context, p *api.PodSandbox) error {
	l.add("RemovePodSandbox", p.GetName())
	return nil
}
func (l *nriLogger) UpdatePodSandbox(_ context.Context, p *api.PodSandbox, _, _ *api.LinuxResources) error {
	l.add("UpdatePodSandbox", p.GetName())
	return nil
}
func (l *nriLogger) PostUpdatePodSandbox(_ context.Context, p *api.PodSandbox) error {
	l.add("PostUpdatePodSandbox", p.GetName())
	return nil
}
func (l *nriLogger) CreateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	l.add("CreateContainer", c.GetName())
	return nil, nil, nil
}
func (l *nriLogger) PostCreateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) error {
	l.add("PostCreateContainer", c.GetName())
	return nil
}
func (l *nriLogger) StartContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) error {
	l.add("StartContainer", c.GetName())
	return nil
}
func (l *nriLogger) PostStartContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) error {
	l.add(fmt.Sprintf("PostStartContainer(pid>0=%v)", c.GetPid() > 0), c.GetName())
	return nil
}
func (l *nriLogger) UpdateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container, _ *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	l.add("UpdateContainer", c.GetName())
	return nil, nil
}
func (l *nriLogger) PostUpdateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) error {
	l.add("PostUpdateContainer", c.GetName())
	return nil
}
func (l *nriLogger) StopContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) ([]*api.ContainerUpdate, error) {
	l.add("StopContainer", c.GetName())
	return nil, nil
}
func (l *nriLogger) RemoveContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) error {
	l.add("RemoveContainer", c.GetName())
	return nil
}

// nriInjector adjusts containers labelled nri-inject: an env var, a
// read-only bind mount of dir, /dev/null as /dev/nri-null, an rlimit and
// an annotation.
type nriInjector struct{ dir string }

func (i *nriInjector) CreateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	if c.GetLabels()["nri-inject"] == "" {
		return nil, nil, nil
	}
	a := &api.ContainerAdjustment{}
	a.AddEnv("NRI_INJECTED", "yes")
	a.AddMount(&api.Mount{Source: i.dir, Destination: "/nri-mnt", Type: "bind", Options: []string{"rbind", "ro"}})
	a.AddDevice(&api.LinuxDevice{Path: "/dev/nri-null", Type: "c", Major: 1, Minor: 3, FileMode: api.FileMode(0o666)})
	a.AddRlimit("RLIMIT_NOFILE", 1234, 1234)
	a.AddAnnotation("nri.test/injected", "true")
	return a, nil, nil
}

// nriRefuser is a validator that refuses the adjustments of any container
// of a pod annotated nri.test/refuse.
type nriRefuser struct{}

func (nriRefuser) ValidateContainerAdjustment(_ context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	if why := req.GetPod().GetAnnotations()["nri.test/refuse"]; why != "" {
		return errors.New("refused by the test validator: " + why)
	}
	return nil
}

// nriConflict sets the memory limit of the containers of pods annotated
// nri.test/conflict: two of them conflict.
type nriConflict struct{ limit int64 }

func (c nriConflict) CreateContainer(_ context.Context, p *api.PodSandbox, _ *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	if p.GetAnnotations()["nri.test/conflict"] == "" {
		return nil, nil, nil
	}
	a := &api.ContainerAdjustment{}
	a.SetLinuxMemoryLimit(c.limit)
	return a, nil, nil
}

// nriHang hangs on containers of pods annotated nri.test/hang, and
// crashes (drops its connection mid-request) on those annotated
// nri.test/crash.
type nriHang struct {
	stop func()
}

func (h *nriHang) CreateContainer(ctx context.Context, p *api.PodSandbox, _ *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	switch {
	case p.GetAnnotations()["nri.test/hang"] != "":
		<-ctx.Done()
		time.Sleep(time.Minute)
	case p.GetAnnotations()["nri.test/crash"] != "":
		h.stop()
		time.Sleep(time.Minute)
	}
	return nil, nil, nil
}

// startPlugin connects p to d's NRI socket as idx-name.
func startPlugin(t *testing.T, d *testutil.Daemon, p any, idx, name string, opts ...stub.Option) stub.Stub {
	t.Helper()
	s, err := stub.New(p, append([]stub.Option{stub.WithSocketPath(d.NRISocket), stub.WithPluginIdx(idx), stub.WithPluginName(name)}, opts...)...)
	if err != nil {
		t.Fatalf("plugin %s: %v", name, err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("start plugin %s: %v", name, err)
	}
	t.Cleanup(s.Stop)
	return s
}

func bundleSpec(t *testing.T, d *testutil.Daemon, id string) *specs.Spec {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(d.Root, "containers", id, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s specs.Spec
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// Plugins written on NRI's stub, connected to a real daemon over its
// socket: a logger sees every event of a pod and its containers in the
// order NRI defines, a container exiting on its own among them; an
// injector's env var, mount, device, rlimit and annotation are in the OCI
// spec and what the process sees; a plugin's unsolicited update of a
// running container's CPU and memory is in force; a validator's refusal
// fails CreateContainer with its reason and leaves nothing; a plugin that
// hangs or crashes mid-request costs the request timeout at most and
// fails no pod; a plugin connecting late is synchronised with what runs.
func TestNRIPlugins(t *testing.T) {
	testutil.RequiresRoot(t)
	t.Parallel()
	img := testutil.Busybox(t)
	pluginDir, confDir := buildPreinstalled(t)
	d := testutil.StartDaemon(t, testutil.Options{
		Image: &img,
		ExtraConfig: fmt.Sprintf("[nri]\nplugin_request_timeout = \"1s\"\nplugin_path = %q\nplugin_config_path = %q\n", pluginDir, confDir) +
			testutil.MetricsConfig,
	})
	e := &env{t: t, d: d, img: img}
	shared := t.TempDir()
	if err := os.WriteFile(filepath.Join(shared, "hello"), []byte("from nri\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	logger := &nriLogger{}
	startPlugin(t, d, logger, "10", "logger")
	startPlugin(t, d, &nriInjector{dir: shared}, "20", "injector")
	updater := startPlugin(t, d, &nriLogger{}, "30", "updater")
	startPlugin(t, d, nriRefuser{}, "40", "refuser")

	pod := e.podConfig("nri")
	podID := e.runPod(pod)
	cfg := e.ctrConfig("inject", "sleep", "3600")
	cfg.Labels["nri-inject"] = "yes"
	id := e.run(podID, pod, cfg)

	// The OCI spec runc got.
	spec := bundleSpec(t, d, id)
	if !slices.Contains(spec.Process.Env, "NRI_INJECTED=yes") {
		t.Errorf("spec env %v lacks NRI_INJECTED=yes", spec.Process.Env)
	}
	if !slices.ContainsFunc(spec.Mounts, func(m specs.Mount) bool { return m.Destination == "/nri-mnt" && m.Source == shared }) {
		t.Errorf("spec mounts lack /nri-mnt from %s: %+v", shared, spec.Mounts)
	}
	if !slices.ContainsFunc(spec.Linux.Devices, func(dv specs.LinuxDevice) bool { return dv.Path == "/dev/nri-null" && dv.Major == 1 && dv.Minor == 3 }) {
		t.Errorf("spec devices lack /dev/nri-null: %+v", spec.Linux.Devices)
	}
	if !slices.ContainsFunc(spec.Process.Rlimits, func(r specs.POSIXRlimit) bool { return r.Type == "RLIMIT_NOFILE" && r.Hard == 1234 && r.Soft == 1234 }) {
		t.Errorf("spec rlimits lack RLIMIT_NOFILE 1234: %+v", spec.Process.Rlimits)
	}
	if spec.Annotations["nri.test/injected"] != "true" {
		t.Errorf("spec annotations lack nri.test/injected: %v", spec.Annotations)
	}
	// What the process sees.
	if r := e.exec(id, "sh", "-c", "echo $NRI_INJECTED"); strings.TrimSpace(string(r.Stdout)) != "yes" {
		t.Errorf("$NRI_INJECTED in the container: %q %q", r.Stdout, r.Stderr)
	}
	if r := e.exec(id, "cat", "/nri-mnt/hello"); string(r.Stdout) != "from nri\n" {
		t.Errorf("cat /nri-mnt/hello: exit %d, %q %q", r.ExitCode, r.Stdout, r.Stderr)
	}
	if r := e.exec(id, "touch", "/nri-mnt/new"); r.ExitCode == 0 {
		t.Errorf("the injected mount is writable")
	}
	if r := e.exec(id, "sh", "-c", "echo hi > /dev/nri-null && ls -l /dev/nri-null"); r.ExitCode != 0 || !strings.Contains(string(r.Stdout), "1,   3") {
		t.Errorf("/dev/nri-null: exit %d, %q %q; want a writable character device 1,3", r.ExitCode, r.Stdout, r.Stderr)
	}
	if r := e.exec(id, "sh", "-c", "ulimit -n"); strings.TrimSpace(string(r.Stdout)) != "1234" {
		t.Errorf("ulimit -n in the container: %q %q, want 1234", r.Stdout, r.Stderr)
	}
	// The pre-installed plugin, started with the daemon with its
	// configuration from plugin_config_path.
	if r := e.exec(id, "sh", "-c", "echo $NRI_PREINSTALLED"); strings.TrimSpace(string(r.Stdout)) != "configured" {
		t.Errorf("$NRI_PREINSTALLED in the container: %q %q, want configured", r.Stdout, r.Stderr)
	}

	// The CRI's own updates reach the plugins: a container's and the pod's.
	if _, err := e.rt().UpdateContainerResources(e.ctx(), &runtimeapi.UpdateContainerResourcesRequest{
		ContainerId: id, Linux: &runtimeapi.LinuxContainerResources{CpuShares: 512, MemoryLimitInBytes: 128 << 20},
	}); err != nil {
		t.Fatalf("UpdateContainerResources: %v", err)
	}
	if _, err := e.rt().UpdatePodSandboxResources(e.ctx(), &runtimeapi.UpdatePodSandboxResourcesRequest{
		PodSandboxId: podID, Resources: &runtimeapi.LinuxContainerResources{CpuShares: 1024, MemoryLimitInBytes: 256 << 20},
	}); err != nil {
		t.Fatalf("UpdatePodSandboxResources: %v", err)
	}

	// An update nobody asked for: CPU and memory of the running container.
	u := &api.ContainerUpdate{ContainerId: id, Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{
		Cpu:    &api.LinuxCPU{Quota: api.Int64(50000), Period: api.UInt64(100000)},
		Memory: &api.LinuxMemory{Limit: api.Int64(96 << 20)},
	}}}
	failed, err := updater.UpdateContainers([]*api.ContainerUpdate{u})
	if err != nil || len(failed) != 0 {
		t.Fatalf("unsolicited update: failed %v, %v", failed, err)
	}
	res := e.status(id).GetResources().GetLinux()
	if res.GetMemoryLimitInBytes() != 96<<20 || res.GetCpuQuota() != 50000 || res.GetCpuPeriod() != 100000 {
		t.Errorf("status resources after the plugin's update: %+v", res)
	}
	memFile, cpuFile, wantMem, wantCPU := "memory/memory.limit_in_bytes", "cpu/cpu.cfs_quota_us", fmt.Sprint(96<<20), "50000"
	if testutil.Unified() {
		memFile, cpuFile, wantCPU = "memory.max", "cpu.max", "50000 100000"
	}
	cg := func(file string) string {
		parts := strings.SplitN(file, "/", 2)
		path := filepath.Join("/sys/fs/cgroup", spec.Linux.CgroupsPath, file)
		if len(parts) == 2 {
			path = filepath.Join("/sys/fs/cgroup", parts[0], spec.Linux.CgroupsPath, parts[1])
		}
		data, _ := os.ReadFile(path)
		return strings.TrimSpace(string(data))
	}
	if !strings.Contains(spec.Linux.CgroupsPath, ":") {
		if got := cg(memFile); got != wantMem {
			t.Errorf("%s after the plugin's update: %q, want %s", memFile, got, wantMem)
		}
		if got := cg(cpuFile); got != wantCPU {
			t.Errorf("%s after the plugin's update: %q, want %s", cpuFile, got, wantCPU)
		}
	}

	// A container that exits on its own is reported stopped.
	done := e.run(podID, pod, e.ctrConfig("done", "true"))
	e.waitState(done, runtimeapi.ContainerState_CONTAINER_EXITED, 30*time.Second)
	eventually(t, 10*time.Second, "StopContainer of the container that exited", func() bool {
		return slices.Contains(logger.seen(), "StopContainer done")
	})

	// A validator's refusal.
	refused := e.podConfig("nri-refused")
	refused.Annotations = map[string]string{"nri.test/refuse": "no-such-pod-allowed"}
	refusedID := e.runPod(refused)
	before := listContainers(t, e)
	_, err = e.rt().CreateContainer(e.ctx(), &runtimeapi.CreateContainerRequest{PodSandboxId: refusedID, Config: e.ctrConfig("refused", "sleep", "60"), SandboxConfig: refused})
	if err == nil || !strings.Contains(err.Error(), "no-such-pod-allowed") {
		t.Fatalf("CreateContainer in a pod the validator refuses: %v, want its reason", err)
	}
	if code := status.Code(err); code != codes.FailedPrecondition {
		t.Errorf("refused CreateContainer: code %s, want FailedPrecondition", code)
	}
	if after := listContainers(t, e); len(after) != len(before) {
		t.Errorf("containers %v after the refused create, want %v", after, before)
	}
	// The logger took the container before the validator refused it: it
	// is told of the undoing, so that what it set aside for it is freed.
	if seen := logger.seen(); !slices.Contains(seen, "CreateContainer refused") || slices.Index(seen, "RemoveContainer refused") < slices.Index(seen, "CreateContainer refused") {
		t.Errorf("logger's events %q: want CreateContainer refused, then RemoveContainer refused", seen)
	}

	// Two plugins setting one container's memory limit conflict: NRI
	// refuses the creation, naming both.
	startPlugin(t, d, nriConflict{limit: 64 << 20}, "70", "conflict-a")
	startPlugin(t, d, nriConflict{limit: 80 << 20}, "71", "conflict-b")
	conflicting := e.podConfig("nri-conflict")
	conflicting.Annotations = map[string]string{"nri.test/conflict": "yes"}
	conflictID := e.runPod(conflicting)
	_, err = e.rt().CreateContainer(e.ctx(), &runtimeapi.CreateContainerRequest{PodSandboxId: conflictID, Config: e.ctrConfig("conflicted", "sleep", "60"), SandboxConfig: conflicting})
	if err == nil || !strings.Contains(err.Error(), "conflict-a") || !strings.Contains(err.Error(), "conflict-b") {
		t.Errorf("CreateContainer with conflicting adjustments: %v, want a refusal naming both plugins", err)
	}
	if after := listContainers(t, e); len(after) != len(before) {
		t.Errorf("containers %v after the conflicting create, want %v", after, before)
	}

	// A plugin connecting now is synchronised with every pod and container.
	late := &nriLogger{}
	startPlugin(t, d, late, "50", "late")
	var synced []string
	eventually(t, 10*time.Second, "the late plugin's sync", func() bool {
		late.mu.Lock()
		defer late.mu.Unlock()
		synced = slices.Clone(late.synced)
		return len(synced) >= 4
	})
	for _, want := range []string{"pod nri", "pod nri-refused", "pod nri-conflict", "container inject CONTAINER_RUNNING", "container done CONTAINER_STOPPED"} {
		if !slices.Contains(synced, want) {
			t.Errorf("the late plugin's sync %v lacks %q", synced, want)
		}
	}

	// The pod's teardown, then the order of everything the logger saw.
	if _, err := e.rt().StopPodSandbox(e.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt().RemovePodSandbox(e.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatal(err)
	}
	got := logger.seen()
	inOrder := func(want ...string) {
		t.Helper()
		i := 0
		for _, ev := range got {
			if i < len(want) && ev == want[i] {
				i++
			}
		}
		if i < len(want) {
			t.Errorf("events %q lack, in order, %q (stuck at %q)", got, want, want[i])
		}
	}
	inOrder("RunPodSandbox nri", "CreateContainer inject", "PostCreateContainer inject", "StartContainer inject",
		"PostStartContainer(pid>0=true) inject", "StopContainer inject", "StopPodSandbox nri", "RemoveContainer inject", "RemovePodSandbox nri")
	inOrder("PostStartContainer(pid>0=true) inject", "UpdateContainer inject", "PostUpdateContainer inject",
		"UpdatePodSandbox nri", "PostUpdatePodSandbox nri", "StopPodSandbox nri")
	inOrder("CreateContainer done", "StartContainer done", "StopContainer done", "RemoveContainer done", "RemovePodSandbox nri")
	if n := strings.Count(strings.Join(got, "\n"), "StopContainer inject"); n != 1 {
		t.Errorf("StopContainer inject told %d times, want once: %q", n, got)
	}

	// NRI's metrics: plugins connected, requests by plugin and event, and
	// the refusal.
	fams := testutil.Scrape(t, d.MetricsURL(t))
	if f := fams["crib_nri_plugins"]; f == nil || f.GetMetric()[0].GetGauge().GetValue() < 5 {
		t.Errorf("crib_nri_plugins: %v, want at least 5", f)
	}
	found := map[string]bool{}
	for _, m := range fams["crib_nri_requests_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		found[labels["plugin"]+" "+labels["event"]] = true
	}
	for _, want := range []string{"10-logger CreateContainer", "10-logger StopPodSandbox", "20-injector CreateContainer"} {
		if !found[want] {
			t.Errorf("crib_nri_requests_total lacks %q: %v", want, found)
		}
	}
	if f := fams["crib_nri_request_duration_seconds"]; f == nil {
		t.Errorf("no crib_nri_request_duration_seconds")
	}
	if f := fams["crib_nri_refused_total"]; f == nil || f.GetMetric()[0].GetCounter().GetValue() < 1 {
		t.Errorf("crib_nri_refused_total: %v, want the validator's refusal", f)
	}

	// A plugin that hangs, then one that crashes mid-request: each costs
	// the request timeout at most, and the pod runs, under NRI's default
	// failure policy.
	hang := &nriHang{}
	hs := startPlugin(t, d, hang, "60", "hang")
	hang.stop = hs.Stop
	for _, a := range []string{"nri.test/hang", "nri.test/crash"} {
		p := e.podConfig("nri-" + strings.TrimPrefix(a, "nri.test/"))
		p.Annotations = map[string]string{a: "yes"}
		pid := e.runPod(p)
		began := time.Now()
		cid := e.run(pid, p, e.ctrConfig("c", "sleep", "3600"))
		t.Logf("%s: the container was made and started in %s", a, time.Since(began).Round(time.Millisecond))
		e.waitState(cid, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
		if a == "nri.test/hang" {
			// The hung plugin was dropped; a new one takes its place.
			hang2 := &nriHang{}
			hs2 := startPlugin(t, d, hang2, "61", "crash")
			hang2.stop = hs2.Stop
		}
	}
}

// nriBlocker holds every CreateContainer until its context ends, telling
// held of each.
type nriBlocker struct{ held chan string }

func (p *nriBlocker) CreateContainer(ctx context.Context, _ *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	select {
	case p.held <- c.GetId():
	default:
	}
	<-ctx.Done()
	return nil, nil, ctx.Err()
}

// A daemon killed with SIGKILL while a plugin holds its CreateContainer
// leaves nothing of the container once restarted (the leak check at the
// end covers mounts, cgroups and processes too), and plugins connect to
// the new daemon on the same socket and get its pods in their sync.
func TestNRIKillDuringRequest(t *testing.T) {
	testutil.RequiresRoot(t)
	t.Parallel()
	img := testutil.Busybox(t)
	d := testutil.StartDaemon(t, testutil.Options{
		Image:       &img,
		ExtraConfig: "[nri]\nplugin_request_timeout = \"60s\"\n",
	})
	e := &env{t: t, d: d, img: img}
	blocker := &nriBlocker{held: make(chan string, 1)}
	startPlugin(t, d, blocker, "10", "blocker")

	pod := e.podConfig("nri-kill")
	podID := e.runPod(pod)
	go func() {
		// Its answer is the daemon's death.
		_, _ = e.rt().CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: e.ctrConfig("held", "sleep", "3600"), SandboxConfig: pod})
	}()
	var held string
	select {
	case held = <-blocker.held:
	case <-time.After(testutil.Patience(30 * time.Second)):
		t.Fatal("the plugin never got the CreateContainer")
	}
	d.Kill9(t)
	d.Restart(t)

	if ids := listContainers(t, e); len(ids) != 0 {
		t.Errorf("containers after the restart: %v, want none (the held creation rolled back)", ids)
	}
	if _, err := os.Stat(filepath.Join(d.Root, "containers", held)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("bundle of the held container %s after the restart: %v, want none", held, err)
	}

	// A plugin connects to the new daemon and sees the pod; containers
	// are made with it.
	logger := &nriLogger{}
	startPlugin(t, d, logger, "10", "logger")
	eventually(t, 10*time.Second, "the new plugin's sync", func() bool {
		logger.mu.Lock()
		defer logger.mu.Unlock()
		return slices.Contains(logger.synced, "pod nri-kill")
	})
	id := e.run(podID, pod, e.ctrConfig("after", "sleep", "3600"))
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	if !slices.Contains(logger.seen(), "CreateContainer after") {
		t.Errorf("the new plugin's events %q lack CreateContainer after", logger.seen())
	}
}

// buildPreinstalled builds test/nri/plugins/marker as the pre-installed
// plugin 05-marker, configured by 05-marker.conf, and returns the plugin
// and configuration directories.
func buildPreinstalled(t *testing.T) (string, string) {
	t.Helper()
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	plugins, conf := t.TempDir(), t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(plugins, "05-marker"), "./test/nri/plugins/marker")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the marker plugin: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(conf, "05-marker.conf"), []byte("configured\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return plugins, conf
}

// nriRebalancer refuses StartContainer and, as resource-policy plugins do
// when a container stops, answers StopContainer with an update: here of
// the stopped container itself.
type nriRebalancer struct{}

func (nriRebalancer) StartContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) error {
	return fmt.Errorf("refused %s", c.GetName())
}

func (nriRebalancer) StopContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) ([]*api.ContainerUpdate, error) {
	return []*api.ContainerUpdate{{
		ContainerId: c.GetId(), IgnoreFailure: true,
		Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: api.UInt64(256)}}},
	}}, nil
}

// The updates a plugin answers a StopContainer with are not applied under
// the stopped container's lock: a StartContainer the plugin refuses, whose
// undoing tells the plugin of the stop, returns its refusal rather than
// waiting forever on the container it holds.
func TestNRIStopUpdateNoDeadlock(t *testing.T) {
	testutil.RequiresRoot(t)
	t.Parallel()
	img := testutil.Busybox(t)
	d := testutil.StartDaemon(t, testutil.Options{Image: &img})
	e := &env{t: t, d: d, img: img}
	startPlugin(t, d, nriRebalancer{}, "10", "rebalancer")

	pod := e.podConfig("nri-rebalance")
	podID := e.runPod(pod)
	id := e.create(podID, pod, e.ctrConfig("c", "sleep", "3600"))
	ctx, cancel := context.WithTimeout(context.Background(), testutil.Patience(30*time.Second))
	defer cancel()
	_, err := e.rt().StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	if status.Code(err) == codes.DeadlineExceeded {
		t.Fatalf("StartContainer refused by a plugin did not return: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "refused c") {
		t.Fatalf("StartContainer: %v, want the plugin's refusal", err)
	}
	// The container is not wedged: it can be removed.
	if _, err := e.rt().RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatalf("RemoveContainer: %v", err)
	}
}
