package integration

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The lists the kubelet sends for procMount Default (k8s.io/kubernetes
// pkg/securitycontext: ConvertToRuntimeMaskedPaths, ...ReadonlyPaths); for
// Unmasked it sends both empty.
var (
	kubeletMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
		"/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	kubeletReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// mountOpts maps each mount point in a container's /proc/self/mountinfo
// to the per-mount options of the first mount there (mounts are listed in
// the order they were made: the copies of a recursive bind's mounts come
// with it, before what is mounted over them later).
func (e *env) mountOpts(id string) map[string]string {
	e.t.Helper()
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(e.execOut(id, "cat", "/proc/self/mountinfo")))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 5 {
			if _, seen := out[f[4]]; !seen {
				out[f[4]] = f[5]
			}
		}
	}
	return out
}

// TestUserNamespaceProcMount runs, in a pod of its own user namespace (where
// the kubelet allows procMount Unmasked), a container as the kubelet sends
// procMount Default and one as it sends Unmasked: the first has /proc
// masked and partly read-only, the second the whole of its /proc.
func TestUserNamespaceProcMount(t *testing.T) {
	e := newEnv(t)
	e.requireUserNamespaces()
	pod := e.usernsPod("procmount", 17<<16)
	podID := e.runPod(pod)

	def := e.usernsCtr(pod, "default", "sleep", "3600")
	def.Linux.SecurityContext.MaskedPaths = kubeletMaskedPaths
	def.Linux.SecurityContext.ReadonlyPaths = kubeletReadonlyPaths
	unmasked := e.usernsCtr(pod, "unmasked", "sleep", "3600")
	unmasked.Linux.SecurityContext.MaskedPaths = []string{}
	unmasked.Linux.SecurityContext.ReadonlyPaths = []string{}
	// A net.* sysctl of a namespace the pod's user namespace owns is
	// writable there by CAP_NET_ADMIN alone: its root is not the host's.
	for _, c := range []*runtimeapi.ContainerConfig{def, unmasked} {
		c.Linux.SecurityContext.Capabilities = &runtimeapi.Capability{AddCapabilities: []string{"NET_ADMIN"}}
	}
	defID, unmaskedID := e.run(podID, pod, def), e.run(podID, pod, unmasked)
	e.waitState(defID, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	e.waitState(unmaskedID, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)

	// This kernel's /proc files of the kubelet's lists (some are not built
	// into every kernel): at least one of each list must exist to tell.
	var masked, readonly []string
	for _, p := range kubeletMaskedPaths {
		if st, err := os.Stat(p); err == nil && strings.HasPrefix(p, "/proc/") && st.Mode().IsRegular() {
			masked = append(masked, p)
		}
	}
	for _, p := range kubeletReadonlyPaths {
		if _, err := os.Stat(p); err == nil {
			readonly = append(readonly, p)
		}
	}
	if len(masked) == 0 || len(readonly) == 0 {
		t.Fatalf("the host has none of the masked files %v or none of the read-only paths %v", kubeletMaskedPaths, kubeletReadonlyPaths)
	}

	defMounts, unmaskedMounts := e.mountOpts(defID), e.mountOpts(unmaskedID)
	for _, p := range append(masked, readonly...) {
		if _, ok := defMounts[p]; !ok {
			t.Errorf("procMount Default: %s is not covered by a mount", p)
		}
		if opts, ok := unmaskedMounts[p]; ok {
			t.Errorf("procMount Unmasked: %s is covered by a mount (%s)", p, opts)
		}
	}
	for _, p := range readonly {
		if opts := defMounts[p]; !strings.HasPrefix(opts, "ro") {
			t.Errorf("procMount Default: %s is mounted %q, want read-only", p, opts)
		}
	}
	// A masked file reads as /dev/null under Default, as itself unmasked.
	for _, p := range masked {
		if got := e.execOut(defID, "stat", "-c", "%F", p); got != "character special file" {
			t.Errorf("procMount Default: %s is a %q, want /dev/null bound over it", p, got)
		}
		if got := e.execOut(unmaskedID, "stat", "-c", "%F", p); !strings.Contains(got, "regular") {
			t.Errorf("procMount Unmasked: %s is a %q, want the proc file", p, got)
		}
	}
	// /proc/sys: read-only under Default; unmasked, the pod's root sets
	// the sysctls of the network namespace its user namespace owns.
	const sysctl = "/proc/sys/net/core/somaxconn"
	if out := e.exec(defID, "sh", "-c", "echo 2345 > "+sysctl); out.ExitCode == 0 {
		t.Errorf("procMount Default: writing %s succeeded, want a read-only /proc/sys", sysctl)
	}
	e.execOut(unmaskedID, "sh", "-c", "echo 2345 > "+sysctl)
	if got := e.execOut(defID, "cat", sysctl); got != "2345" {
		t.Errorf("%s after the unmasked container set it = %q, want 2345", sysctl, got)
	}
	e.removeAllAndCheck(t)
}
