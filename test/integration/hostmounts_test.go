package integration

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The entries a running pod adds to the host's mount table, whatever its
// containers (issue #26 asks for at most one; docs/perf/density-2026-11-27.md
// weighs the ways there): a pod has its /dev/shm; its namespaces are held
// by the namespace holder's descriptors, not pinned by mounts. A running
// container adds none: its rootfs is in its own mount namespace only.
const (
	hostNetworkPodMounts = 1
	ownNetworkPodMounts  = 1
)

// TestHostMountsPerPod: real pods, host-network (of one container and of
// three) and CNI, each add to the host's mount table no more entries than
// the bound above, and removing them takes every one away. The containers
// work without their host mounts: what they write lands in their writable
// layer, and a container started later in the same pod shares the pod's
// /dev/shm with them. Only mounts under this daemon's directories are
// counted: the other tests on the host mount and unmount meanwhile.
func TestHostMountsPerPod(t *testing.T) {
	e := newEnv(t)
	const each = 3
	before := e.cribMounts()
	var pods, first []string
	var hostNetConfigs []*runtimeapi.PodSandboxConfig
	for i := range each {
		pod := e.podConfig(fmt.Sprintf("hostnet-%d", i))
		pod.Linux.SecurityContext.NamespaceOptions.Network = runtimeapi.NamespaceMode_NODE
		id := e.runPod(pod)
		pods = append(pods, id)
		hostNetConfigs = append(hostNetConfigs, pod)
		containers := 1
		if i == 0 {
			containers = 3
		}
		for c := range containers {
			ctr := e.run(id, pod, e.ctrConfig(fmt.Sprintf("c%d", c), "sleep", "3600"))
			e.waitState(ctr, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
			if c == 0 {
				first = append(first, ctr)
			}
		}
	}
	hostNet := e.cribMounts()

	// The first pod's first container, without its rootfs on the host:
	// its files are its overlay's, its writes go to its upper dir.
	ctr := first[0]
	if out := e.execOut(ctr, "sh", "-c", "echo written > /written && cat /written && ls /bin/busybox"); out != "written\n/bin/busybox" {
		t.Errorf("exec in a container without its host mounts: %q", out)
	}
	if data, err := os.ReadFile(filepath.Join(e.d.Root, "containers", ctr, "fs", "written")); err != nil || string(data) != "written\n" {
		t.Errorf("the container's write in its writable layer on the host: %q, %v", data, err)
	}
	e.execOut(ctr, "sh", "-c", "echo shared > /dev/shm/note")
	later := e.run(pods[0], hostNetConfigs[0], e.ctrConfig("later", "sleep", "3600"))
	e.waitState(later, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	if out := e.execOut(later, "cat", "/dev/shm/note"); out != "shared" {
		t.Errorf("a container started later reads the pod's /dev/shm as %q, want what its sibling wrote", out)
	}
	if got := e.cribMounts(); len(got) != len(hostNet) {
		t.Errorf("a fourth running container in a pod changed the mounts under the daemon's directories from %d to %d:\n%s",
			len(hostNet), len(got), strings.Join(got, "\n"))
	}
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
