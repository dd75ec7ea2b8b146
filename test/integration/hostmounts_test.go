package integration

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The entries a running pod of one container adds to the host's mount
// table (issue #26 asks for at most one; docs/perf/density-2026-11-27.md
// weighs the ways there): a host-network pod has its IPC namespace pin,
// its /dev/shm and its container's rootfs; a pod of its own network adds
// its network and UTS namespace pins.
const (
	hostNetworkPodMounts = 3
	ownNetworkPodMounts  = 5
)

// TestHostMountsPerPod: real pods, host-network and CNI, each add to the
// host's mount table no more entries than the bound above, and removing
// them takes every one away. Only mounts under this daemon's directories
// are counted: the other tests on the host mount and unmount meanwhile.
func TestHostMountsPerPod(t *testing.T) {
	e := newEnv(t)
	const each = 3
	before := e.cribMounts()
	var pods []string
	for i := range each {
		pod := e.podConfig(fmt.Sprintf("hostnet-%d", i))
		pod.Linux.SecurityContext.NamespaceOptions.Network = runtimeapi.NamespaceMode_NODE
		id := e.runPod(pod)
		pods = append(pods, id)
		e.waitState(e.run(id, pod, e.ctrConfig("c", "sleep", "3600")), runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	}
	hostNet := e.cribMounts()
	for i := range each {
		pod := e.podConfig(fmt.Sprintf("ownnet-%d", i))
		id := e.runPod(pod)
		pods = append(pods, id)
		e.waitState(e.run(id, pod, e.ctrConfig("c", "sleep", "3600")), runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	}
	all := e.cribMounts()
	t.Logf("mounts under the daemon's directories: %d before, %d with %d host-network pods, %d with %d CNI pods more",
		len(before), len(hostNet), each, len(all), each)
	if got := len(hostNet) - len(before); got > each*hostNetworkPodMounts {
		t.Errorf("%d host-network pods added %d mounts, more than %d each:\n%s", each, got, hostNetworkPodMounts, strings.Join(hostNet, "\n"))
	}
	if got := len(all) - len(hostNet); got > each*ownNetworkPodMounts {
		t.Errorf("%d CNI pods added %d mounts, more than %d each:\n%s", each, got, ownNetworkPodMounts, strings.Join(all, "\n"))
	}
	for _, id := range pods {
		if _, err := e.rt().StopPodSandbox(e.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.rt().RemovePodSandbox(e.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
			t.Fatal(err)
		}
	}
	if left := e.cribMounts(); len(left) != len(before) {
		t.Errorf("after the pods were removed, mounts under the daemon's directories:\n%s\nbefore them:\n%s",
			strings.Join(left, "\n"), strings.Join(before, "\n"))
	}
}

// cribMounts are the mount points of the host's mount table under this
// daemon's root and state directories.
func (e *env) cribMounts() []string {
	e.t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		point := fields[4]
		for _, dir := range []string{e.d.Root, e.d.State} {
			if point == dir || strings.HasPrefix(point, dir+"/") {
				out = append(out, point)
				break
			}
		}
	}
	if err := sc.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}
