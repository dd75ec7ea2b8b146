package integration

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// These tests read the cgroup files of real containers, on whichever cgroup
// version and driver the host and the harness give them: cgroup v1 with
// cgroupfs here, cgroup v2 with cgroupfs and systemd in the VM of
// test/vm/run.sh.

const mib = 1 << 20

// limitedConfig is a container running cmd with a memory limit and a CPU
// quota of quota microseconds per 100 ms period.
func (e *env) limitedConfig(name string, memory, quota int64, cmd ...string) *runtimeapi.ContainerConfig {
	cfg := e.ctrConfig(name, cmd...)
	cfg.Linux.Resources = &runtimeapi.LinuxContainerResources{
		MemoryLimitInBytes: memory,
		CpuPeriod:          100000,
		CpuQuota:           quota,
		CpuShares:          512,
	}
	return cfg
}

// cgroupFile reads a cgroup file of the container as it sees its own
// cgroup (runc mounts it at /sys/fs/cgroup): v2Name on the unified
// hierarchy, v1Path (controller/file) on v1.
func (e *env) cgroupFile(id, v2Name, v1Path string) string {
	e.t.Helper()
	path := "/sys/fs/cgroup/" + v1Path
	if testutil.Unified() {
		path = "/sys/fs/cgroup/" + v2Name
	}
	resp := e.exec(id, "cat", path)
	if resp.ExitCode != 0 {
		e.t.Fatalf("cat %s in %s: exit %d: %s", path, id, resp.ExitCode, resp.Stderr)
	}
	return strings.TrimSpace(string(resp.Stdout))
}

// wantLimits checks the container's memory limit, CPU quota and CPU
// shares in its cgroup files; cgroup v2 has shares as cpu.weight, converted
// as runc does (1 + (shares-2)*9999/262142).
func (e *env) wantLimits(id string, memory, quota, shares int64) {
	e.t.Helper()
	mem := e.cgroupFile(id, "memory.max", "memory/memory.limit_in_bytes")
	if mem != strconv.FormatInt(memory, 10) {
		e.t.Errorf("memory limit in the cgroup = %s, want %d", mem, memory)
	}
	if testutil.Unified() {
		if got, want := e.cgroupFile(id, "cpu.max", ""), strconv.FormatInt(quota, 10)+" 100000"; got != want {
			e.t.Errorf("cpu.max = %q, want %q", got, want)
		}
		if got, want := e.cgroupFile(id, "cpu.weight", ""), strconv.FormatInt(1+(shares-2)*9999/262142, 10); got != want {
			e.t.Errorf("cpu.weight = %s, want %s (shares %d)", got, want, shares)
		}
		return
	}
	if got := e.cgroupFile(id, "", "cpu/cpu.cfs_quota_us"); got != strconv.FormatInt(quota, 10) {
		e.t.Errorf("cpu.cfs_quota_us = %s, want %d", got, quota)
	}
	if got := e.cgroupFile(id, "", "cpu/cpu.shares"); got != strconv.FormatInt(shares, 10) {
		e.t.Errorf("cpu.shares = %s, want %d", got, shares)
	}
}

func TestCgroupLimitsAndUpdate(t *testing.T) {
	e := newEnv(t)
	pod := e.podConfig("limits")
	podID := e.runPod(pod)
	id := e.run(podID, pod, e.limitedConfig("limited", 64*mib, 50000, "sleep", "3600"))
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	e.wantLimits(id, 64*mib, 50000, 512)

	_, err := e.rt().UpdateContainerResources(e.ctx(), &runtimeapi.UpdateContainerResourcesRequest{
		ContainerId: id,
		Linux: &runtimeapi.LinuxContainerResources{
			MemoryLimitInBytes: 96 * mib, CpuPeriod: 100000, CpuQuota: 120000, CpuShares: 1024,
		},
	})
	if err != nil {
		t.Fatalf("UpdateContainerResources: %v", err)
	}
	e.wantLimits(id, 96*mib, 120000, 1024)
	if got := e.status(id).GetResources().GetLinux(); got.GetMemoryLimitInBytes() != 96*mib || got.GetCpuQuota() != 120000 {
		t.Errorf("ContainerStatus resources after the update = %v", got)
	}
}

// TestCgroupV2Unified checks the cgroup v2 files the kubelet sets through
// LinuxContainerResources.unified: memory.oom.group (the whole container
// is killed on OOM, kubelet 1.32+) and memory.high (MemoryQoS).
func TestCgroupV2Unified(t *testing.T) {
	if !testutil.Unified() {
		t.Skip("cgroup v1 host: unified keys need cgroup v2")
	}
	e := newEnv(t)
	pod := e.podConfig("unified")
	podID := e.runPod(pod)
	cfg := e.limitedConfig("unified", 64*mib, 0, "sleep", "3600")
	cfg.Linux.Resources.Unified = map[string]string{"memory.oom.group": "1", "memory.high": strconv.Itoa(48 * mib)}
	id := e.run(podID, pod, cfg)
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	for file, want := range map[string]string{"memory.oom.group": "1", "memory.high": strconv.Itoa(48 * mib), "memory.max": strconv.Itoa(64 * mib)} {
		if got := e.cgroupFile(id, file, ""); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
}

func TestOOMKilled(t *testing.T) {
	e := newEnv(t)
	pod := e.podConfig("oom")
	podID := e.runPod(pod)
	// dd fills a 256 MiB buffer: far over the 32 MiB limit, and there is no
	// swap to escape to.
	id := e.run(podID, pod, e.limitedConfig("hog", 32*mib, 0,
		"dd", "if=/dev/zero", "of=/dev/null", "bs=256M", "count=1"))
	st := e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 30*time.Second)
	if st.Reason != "OOMKilled" || st.ExitCode != 137 {
		t.Errorf("container over its memory limit: reason %q, exit code %d; want OOMKilled, 137 (message %q)", st.Reason, st.ExitCode, st.Message)
	}
	// A container that exits on its own under the same limit is not.
	okID := e.run(podID, pod, e.limitedConfig("fits", 32*mib, 0, "dd", "if=/dev/zero", "of=/dev/null", "bs=1M", "count=1"))
	if st := e.waitState(okID, runtimeapi.ContainerState_CONTAINER_EXITED, 30*time.Second); st.Reason != "Completed" {
		t.Errorf("container within its limit: reason %q, want Completed", st.Reason)
	}
}

func TestStatsArePlausible(t *testing.T) {
	e := newEnv(t)
	pod := e.podConfig("stats")
	podID := e.runPod(pod)
	// Burns CPU and holds a few MiB in a shell variable.
	id := e.run(podID, pod, e.limitedConfig("busy", 128*mib, 0, "sh", "-c",
		`x=$(head -c 4000000 /dev/zero | tr '\0' a); while :; do :; done`))
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	// Writes through to its disk and stays, so that its cgroup keeps the
	// I/O stall it had.
	writer := e.run(podID, pod, e.ctrConfig("writer", "sh", "-c",
		`dd if=/dev/zero of=/written bs=1M count=32 conv=fsync && touch /done; exec sleep 3600`))

	var cs *runtimeapi.ContainerStats
	eventually(t, 30*time.Second, "container CPU usage and memory", func() bool {
		resp, err := e.rt().ContainerStats(e.ctx(), &runtimeapi.ContainerStatsRequest{ContainerId: id})
		if err != nil {
			t.Fatalf("ContainerStats: %v", err)
		}
		cs = resp.Stats
		return cs.GetCpu().GetUsageCoreNanoSeconds().GetValue() > 0 && cs.GetMemory().GetWorkingSetBytes().GetValue() >= 4*mib
	})
	if ws := cs.GetMemory().GetWorkingSetBytes().GetValue(); ws > 128*mib {
		t.Errorf("working set %d bytes is over the container's 128 MiB limit", ws)
	}
	// cgroup v2 has pressure stall information (the kernel's psi=1 here
	// and in the test VM); a busy loop alone on its CPU may stall little,
	// so only its presence is checked.
	if testutil.Unified() && (cs.GetCpu().GetPsi().GetSome() == nil || cs.GetMemory().GetPsi() == nil) {
		t.Errorf("no PSI in the container's stats on cgroup v2: cpu %v, memory %v", cs.GetCpu().GetPsi(), cs.GetMemory().GetPsi())
	}
	// The usage rate needs two samples.
	eventually(t, 30*time.Second, "a non-zero CPU usage rate", func() bool {
		resp, err := e.rt().ContainerStats(e.ctx(), &runtimeapi.ContainerStatsRequest{ContainerId: id})
		return err == nil && resp.Stats.GetCpu().GetUsageNanoCores().GetValue() > 0
	})

	var ps *runtimeapi.PodSandboxStats
	eventually(t, 30*time.Second, "pod CPU and memory", func() bool {
		resp, err := e.rt().PodSandboxStats(e.ctx(), &runtimeapi.PodSandboxStatsRequest{PodSandboxId: podID})
		if err != nil {
			t.Fatalf("PodSandboxStats: %v", err)
		}
		ps = resp.Stats
		return ps.GetLinux().GetCpu().GetUsageCoreNanoSeconds().GetValue() > 0 && ps.GetLinux().GetMemory().GetWorkingSetBytes().GetValue() >= 4*mib
	})
	if n := len(ps.GetLinux().GetContainers()); n != 2 {
		t.Errorf("pod stats hold %d containers, want 2", n)
	}
	if p := ps.GetLinux().GetProcess().GetProcessCount().GetValue(); p < 1 {
		t.Errorf("pod process count = %d, want at least 1", p)
	}

	// The writer's I/O pressure, between two readings of its io.pressure.
	eventually(t, 60*time.Second, "the writer's synced write", func() bool { return e.exec(writer, "test", "-e", "/done").ExitCode == 0 })
	var before, after [2]uint64
	if testutil.Unified() {
		before = e.ioPressure(writer)
	}
	wresp, err := e.rt().ContainerStats(e.ctx(), &runtimeapi.ContainerStatsRequest{ContainerId: writer})
	if err != nil {
		t.Fatalf("ContainerStats: %v", err)
	}
	if testutil.Unified() {
		after = e.ioPressure(writer)
	}
	presp, err := e.rt().PodSandboxStats(e.ctx(), &runtimeapi.PodSandboxStatsRequest{PodSandboxId: podID})
	if err != nil {
		t.Fatalf("PodSandboxStats: %v", err)
	}
	t.Run("io pressure", func(t *testing.T) {
		ctrIO, podIO := wresp.GetStats().GetIo(), presp.GetStats().GetLinux().GetIo()
		if !testutil.Unified() {
			if ctrIO != nil || podIO != nil {
				t.Errorf("I/O pressure reported on cgroup v1: container %v, pod %v", ctrIO, podIO)
			}
			t.Skip("cgroup v1 host: the kernel keeps pressure stall information per cgroup on v2 only (none is reported here, as checked); the VM's run checks it")
		}
		if podIO.GetTimestamp() == 0 || podIO.GetPsi().GetSome() == nil || podIO.GetPsi().GetFull() == nil {
			t.Errorf("pod stats' io = %v, want its cgroup's I/O pressure", podIO)
		}
		if ctrIO.GetTimestamp() == 0 || ctrIO.GetPsi().GetSome() == nil || ctrIO.GetPsi().GetFull() == nil {
			t.Fatalf("container stats' io = %v, want its cgroup's I/O pressure", ctrIO)
		}
		// io.pressure counts microseconds, the CRI nanoseconds.
		for i, got := range []uint64{ctrIO.Psi.Some.Total, ctrIO.Psi.Full.Total} {
			if got < before[i]*1000 || got > after[i]*1000 {
				t.Errorf("io pressure %s total = %d ns, not between the cgroup's %d and %d µs", []string{"some", "full"}[i], got, before[i], after[i])
			}
		}
		t.Logf("the writer stalled on I/O %v (some) and %v (full)", time.Duration(ctrIO.Psi.Some.Total), time.Duration(ctrIO.Psi.Full.Total))
	})
}

// ioPressure reads the some and full totals of the container's
// io.pressure (cgroup v2), in microseconds.
func (e *env) ioPressure(id string) [2]uint64 {
	e.t.Helper()
	var out [2]uint64
	text := e.cgroupFile(id, "io.pressure", "")
	for i, kind := range []string{"some ", "full "} {
		found := false
		for _, line := range strings.Split(text, "\n") {
			if !strings.HasPrefix(line, kind) {
				continue
			}
			for _, field := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(field, "total="); ok {
					n, err := strconv.ParseUint(v, 10, 64)
					if err != nil {
						e.t.Fatalf("io.pressure %q: %v", text, err)
					}
					out[i], found = n, true
				}
			}
		}
		if !found {
			e.t.Fatalf("io.pressure %q has no %stotal", text, kind)
		}
	}
	return out
}

// TestSystemdUnits runs under the systemd driver only: the pod's slice and
// its containers' scopes are systemd units while the pod runs, and none is
// left after it is removed.
func TestSystemdUnits(t *testing.T) {
	if testutil.CgroupDriver() != "systemd" {
		t.Skip("the daemon runs with the cgroupfs driver (" + testutil.CgroupDriverEnv + "=systemd for this test)")
	}
	e := newEnv(t)
	prefix := strings.TrimSuffix(e.d.CgroupParent, ".slice")
	pod := e.podConfig("units")
	podID := e.runPod(pod)
	id := e.run(podID, pod, e.ctrConfig("sleeper", "sleep", "3600"))
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)

	units := strings.Join(testutil.SystemdUnits(prefix+"-*.slice", "crib-*.scope"), "\n")
	slice := prefix + "-" + podID[:12] + ".slice"
	scope := "crib-" + id + ".scope"
	for _, want := range []string{slice, scope} {
		if !strings.Contains(units, want+" loaded active") {
			t.Errorf("systemd unit %s is not loaded and active; units:\n%s", want, units)
		}
	}
	if out, err := exec.Command("systemctl", "show", "--property=Slice", "--value", scope).Output(); err != nil || strings.TrimSpace(string(out)) != slice {
		t.Errorf("the container's scope is in slice %q (%v), want the pod's %s", out, err, slice)
	}
	if _, err := e.rt().StopPodSandbox(e.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt().RemovePodSandbox(e.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatal(err)
	}
	if units := testutil.SystemdUnits(slice, scope); len(units) != 0 {
		t.Errorf("systemd units left after the pod was removed: %v", units)
	}
}
