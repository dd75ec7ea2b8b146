package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// defaultRouteInterface is the host's interface of its default route.
func defaultRouteInterface(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("/proc/net/route")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 2 && f[1] == "00000000" {
			return f[0]
		}
	}
	t.Skip("the host has no default route")
	return ""
}

// TestUserNamespaceHostNetwork runs a pod of its own user namespace on the
// host's network, as containerd 2.4 does: the runtime says it can
// (user_namespaces_host_network), the container is in the host's network
// namespace and the pod's user namespace, and sees the host's /sys,
// read-only all the way down. A net.* sysctl for such a pod is refused
// naming it; removing the pod leaves nothing.
func TestUserNamespaceHostNetwork(t *testing.T) {
	e := newEnv(t)
	e.requireUserNamespaces()
	st, err := e.rt().Status(e.ctx(), &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !st.GetFeatures().GetUserNamespacesHostNetwork() {
		t.Errorf("Status features = %v, want user_namespaces_host_network", st.GetFeatures())
	}
	iface := defaultRouteInterface(t)
	hostNet, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}

	const hostID = 19 << 16
	pod := e.usernsPod("userns-hostnet", hostID)
	pod.Linux.SecurityContext.NamespaceOptions.Network = runtimeapi.NamespaceMode_NODE
	// Sysctls of the pod's own namespaces still apply: its IPC namespace
	// and its user namespace are its own.
	pod.Linux.Sysctls = map[string]string{"kernel.shm_rmid_forced": "1", "user.max_user_namespaces": "7"}
	// crun (1.21) refuses user.* sysctls as not namespaced, though they
	// are per user namespace; runc sets them.
	userSysctl := true
	if handler, _ := testutil.DefaultRuntime(); handler == "crun" {
		delete(pod.Linux.Sysctls, "user.max_user_namespaces")
		userSysctl = false
	}
	podID := e.runPod(pod)
	cfg := e.usernsCtr(pod, "app", "sleep", "3600")
	cfg.Linux.SecurityContext.MaskedPaths = kubeletMaskedPaths
	cfg.Linux.SecurityContext.ReadonlyPaths = kubeletReadonlyPaths
	id := e.run(podID, pod, cfg)
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)

	if got := strings.Fields(e.execOut(id, "cat", "/proc/self/uid_map")); strings.Join(got, " ") != fmt.Sprintf("0 %d %d", hostID, usernsRange) {
		t.Errorf("uid_map in the pod = %v, want 0 %d %d", got, hostID, usernsRange)
	}
	if got := e.execOut(id, "readlink", "/proc/self/ns/net"); got != hostNet {
		t.Errorf("the container's network namespace is %s, want the host's %s", got, hostNet)
	}
	if got := e.execOut(id, "hostname"); got != hostname {
		t.Errorf("hostname in the pod = %q, want the host's %q", got, hostname)
	}
	if got := e.execOut(id, "cat", "/proc/net/dev"); !strings.Contains(got, iface+":") {
		t.Errorf("the container's /proc/net/dev has no %s, the host's default route's interface:\n%s", iface, got)
	}
	hostAddr, err := os.ReadFile("/sys/class/net/" + iface + "/address")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.execOut(id, "cat", "/sys/class/net/"+iface+"/address"); got != strings.TrimSpace(string(hostAddr)) {
		t.Errorf("/sys/class/net/%s/address in the pod = %q, want the host's %q", iface, got, hostAddr)
	}
	if got := e.execOut(id, "cat", "/proc/sys/kernel/shm_rmid_forced"); strings.TrimSpace(got) != "1" {
		t.Errorf("the pod's IPC sysctl = %q, want 1", got)
	}
	if got := e.execOut(id, "cat", "/proc/sys/user/max_user_namespaces"); userSysctl && strings.TrimSpace(got) != "7" {
		t.Errorf("the pod's user sysctl = %q, want 7", got)
	}
	// The host's /sys and every mount under it, as they came with it
	// (crib's cgroup mounts go over them), are read-only.
	mounts := e.mountOpts(id)
	under := 0
	for dst, opts := range mounts {
		if dst == "/sys" || strings.HasPrefix(dst, "/sys/") {
			under++
			if !strings.HasPrefix(opts, "ro") {
				t.Errorf("%s is mounted %q in the pod, want read-only", dst, opts)
			}
		}
	}
	if under < 2 {
		t.Errorf("the pod has %d mounts at or under /sys, want the host's /sys with the mounts under it: %v", under, mounts)
	}
	if _, ok := mounts["/sys/firmware"]; !ok {
		if _, err := os.Stat("/sys/firmware"); err == nil {
			t.Errorf("/sys/firmware is not masked in the pod")
		}
	}

	// The host's network cannot take the pod's net.* sysctls.
	bad := e.usernsPod("userns-hostnet-sysctl", 23<<16)
	bad.Linux.SecurityContext.NamespaceOptions.Network = runtimeapi.NamespaceMode_NODE
	bad.Linux.Sysctls = map[string]string{"net.core.somaxconn": "1234"}
	_, err = e.rt().RunPodSandbox(e.ctx(), &runtimeapi.RunPodSandboxRequest{Config: bad})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `config.linux.sysctls["net.core.somaxconn"]`) {
		t.Errorf("RunPodSandbox in a user namespace on the host network with a net.* sysctl = %v, want InvalidArgument naming it", err)
	}
	e.removeAllAndCheck(t)
}
