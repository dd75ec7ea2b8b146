package integration

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// TestUpdatePodSandboxResources resizes the pod cgroup crib made (the pod
// names no cgroup_parent) and reads it back from the host, on whichever
// cgroup version and driver the test runs under.
func TestUpdatePodSandboxResources(t *testing.T) {
	e := newEnv(t)
	pod := e.podConfig("resize")
	podID := e.runPod(pod)
	id := e.run(podID, pod, e.ctrConfig("sleeper", "sleep", "3600"))
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	podCgroup := e.podCgroup(id)

	resize := func(overhead, res *runtimeapi.LinuxContainerResources) error {
		_, err := e.rt().UpdatePodSandboxResources(e.ctx(), &runtimeapi.UpdatePodSandboxResourcesRequest{
			PodSandboxId: podID, Overhead: overhead, Resources: res,
		})
		return err
	}
	res := &runtimeapi.LinuxContainerResources{CpuShares: 512, CpuQuota: 50000, CpuPeriod: 100000, MemoryLimitInBytes: 64 * mib}
	overhead := &runtimeapi.LinuxContainerResources{CpuQuota: 10000, CpuPeriod: 100000, MemoryLimitInBytes: 16 * mib}
	for i := range 2 { // the second time changes nothing
		if err := resize(overhead, res); err != nil {
			t.Fatalf("UpdatePodSandboxResources (%d): %v", i+1, err)
		}
		podCgroup.want(t, strconv.Itoa(80*mib), "60000")
	}

	// Without limits, the pod's are lifted.
	if err := resize(nil, &runtimeapi.LinuxContainerResources{CpuShares: 512}); err != nil {
		t.Fatal(err)
	}
	podCgroup.want(t, "", "")

	for _, tt := range []struct {
		req  *runtimeapi.UpdatePodSandboxResourcesRequest
		code codes.Code
		says string
	}{
		{&runtimeapi.UpdatePodSandboxResourcesRequest{}, codes.InvalidArgument, "pod_sandbox_id"},
		{&runtimeapi.UpdatePodSandboxResourcesRequest{PodSandboxId: "no-such-pod"}, codes.NotFound, "no-such-pod"},
		{&runtimeapi.UpdatePodSandboxResourcesRequest{PodSandboxId: podID,
			Resources: &runtimeapi.LinuxContainerResources{CpuQuota: 5}}, codes.InvalidArgument, "resources.cpu_quota"},
		{&runtimeapi.UpdatePodSandboxResourcesRequest{PodSandboxId: podID,
			Overhead: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: -1}}, codes.InvalidArgument, "overhead.memory_limit_in_bytes"},
	} {
		_, err := e.rt().UpdatePodSandboxResources(e.ctx(), tt.req)
		if status.Code(err) != tt.code || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("UpdatePodSandboxResources(%v) = %v, want %s naming %s", tt.req, err, tt.code, tt.says)
		}
	}
	if st := e.status(id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("the container is %s after the resizes, want it running", st.State)
	}
}

// podCgroupFiles are where a pod cgroup's memory limit and CFS quota are
// on the host.
type podCgroupFiles struct{ memory, quota string }

// podCgroup finds the cgroup of container id's pod from the host: the
// parent of the cgroup its process is in.
func (e *env) podCgroup(id string) podCgroupFiles {
	e.t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", e.pidOf(id)))
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	paths := map[string]string{} // controller ("" on v2) -> the container's cgroup
	s := bufio.NewScanner(f)
	for s.Scan() {
		parts := strings.SplitN(s.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			paths[c] = parts[2]
		}
	}
	if testutil.Unified() {
		dir := filepath.Join("/sys/fs/cgroup", filepath.Dir(paths[""]))
		return podCgroupFiles{memory: filepath.Join(dir, "memory.max"), quota: filepath.Join(dir, "cpu.max")}
	}
	return podCgroupFiles{
		memory: filepath.Join("/sys/fs/cgroup/memory", filepath.Dir(paths["memory"]), "memory.limit_in_bytes"),
		quota:  filepath.Join("/sys/fs/cgroup/cpu", filepath.Dir(paths["cpu"]), "cpu.cfs_quota_us"),
	}
}

// want checks the pod cgroup's memory limit and CFS quota (per 100 ms);
// "" is no limit.
func (p podCgroupFiles) want(t *testing.T, memory, quota string) {
	t.Helper()
	read := func(path string) string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(data))
	}
	gotMem, gotQuota := read(p.memory), read(p.quota)
	if testutil.Unified() {
		gotQuota = strings.TrimSuffix(gotQuota, " 100000")
		if memory == "" {
			memory = "max"
		}
		if quota == "" {
			quota = "max"
		}
	} else {
		if memory == "" && gotMem != "" {
			// v1 shows "no limit" as the largest page-aligned value.
			if v, err := strconv.ParseInt(gotMem, 10, 64); err == nil && v > 1<<60 {
				memory = gotMem
			}
		}
		if quota == "" {
			quota = "-1"
		}
	}
	if gotMem != memory || gotQuota != quota {
		t.Errorf("pod cgroup: %s = %s, %s = %s; want %s and %s", p.memory, gotMem, p.quota, gotQuota, memory, quota)
	}
}

// TestUpdatePodSandboxResourcesRefused: a resize the kernel refuses half-way
// puts the pod cgroup's previous limits back. Cgroup v1 refuses a memory
// limit below what the pod holds and cannot reclaim (EBUSY), after the new
// CPU quota is already written; the quota must be the old one again.
func TestUpdatePodSandboxResourcesRefused(t *testing.T) {
	if testutil.Unified() {
		t.Skip("cgroup v2 takes any memory.max (it reclaims or OOM-kills): no resize is refused half-way")
	}
	e := newEnv(t)
	pod := e.podConfig("resize-refused")
	podID := e.runPod(pod)
	id := e.run(podID, pod, e.ctrConfig("filler", "sleep", "3600"))
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	podCgroup := e.podCgroup(id)
	resize := func(memory, quota int64) error { return e.resizePod(podID, memory, quota) }
	if err := resize(64*mib, 40000); err != nil {
		t.Fatalf("UpdatePodSandboxResources: %v", err)
	}
	// Shared memory: charged to the pod, not reclaimable without swap.
	e.execOut(id, "dd", "if=/dev/zero", "of=/dev/shm/fill", "bs=1048576", "count=24")
	err := resize(8*mib, 30000)
	if err == nil {
		t.Skip("the kernel took a memory limit below the pod's shared memory (is there swap?): nothing was refused")
	}
	t.Logf("refused as it should be: %v", err)
	podCgroup.want(t, strconv.Itoa(64*mib), "40000")
	e.removeAllAndCheck(t)
}

// resizePod sets the pod's memory limit and CPU quota (per 100 ms), with
// 512 CPU shares.
func (e *env) resizePod(podID string, memory, quota int64) error {
	_, err := e.rt().UpdatePodSandboxResources(e.ctx(), &runtimeapi.UpdatePodSandboxResourcesRequest{
		PodSandboxId: podID,
		Resources:    &runtimeapi.LinuxContainerResources{CpuShares: 512, CpuPeriod: 100000, CpuQuota: quota, MemoryLimitInBytes: memory},
	})
	return err
}
