package ocispec

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	imagespec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// requireRoot skips tests that need root (mknod).
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

// writeFile creates dir/name (and its parents) with content.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// mknod creates a device node with mode 0666 owned by root.
func mknod(t *testing.T, path string, char bool, major, minor uint32) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	typ := uint32(unix.S_IFBLK)
	if char {
		typ = unix.S_IFCHR
	}
	if err := unix.Mknod(path, typ|0o666, int(unix.Mkdev(major, minor))); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
}

const testPasswd = `root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
# a comment
app:x:1000:1000:App:/home/app:/bin/sh
broken line
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
`

const testGroup = `root:x:0:
daemon:x:1:
wheel:x:10:root,app
audio:x:29:app
app:x:1000:
staff:x:50: app , other
nogroup:x:65534:
`

// fixture is a temp world for one Build: a rootfs with passwd and group,
// a host dir for mount sources, and the base dir golden output hides.
type fixture struct {
	base   string
	rootfs string
	host   string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{base: base, rootfs: filepath.Join(base, "rootfs"), host: filepath.Join(base, "host")}
	writeFile(t, f.rootfs, "etc/passwd", testPasswd)
	writeFile(t, f.rootfs, "etc/group", testGroup)
	if err := os.MkdirAll(f.host, 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

// hostDir makes a directory under the host dir and returns its path.
func (f *fixture) hostDir(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(f.host, name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// kubeletMaskedPaths and kubeletReadonlyPaths are the lists the kubelet
// sends for procMount Default (k8s.io/kubernetes pkg/securitycontext,
// ConvertToRuntimeMaskedPaths and ConvertToRuntimeReadonlyPaths).
var (
	kubeletMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
		"/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	kubeletReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// input is a realistic pod-shared-pid busybox container, as the kubelet
// sends it; tests adjust it.
func (f *fixture) input() Input {
	podNS := "/run/crib/ns/pod-1234"
	return Input{
		ID:        "c0ffee",
		SandboxID: "5a4d",
		Container: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: 1},
			Image:    &runtimeapi.ImageSpec{Image: "sha256:abcd", UserSpecifiedImage: "busybox:1.36"},
			Command:  []string{"sleep"},
			Args:     []string{"3600"},
			Envs: []*runtimeapi.KeyValue{
				{Key: "FOO", Value: []byte("bar")},
				{Key: "KUBERNETES_SERVICE_HOST", Value: []byte("10.96.0.1")},
			},
			Annotations: map[string]string{"io.kubernetes.container.hash": "1a2b3c"},
			Labels:      map[string]string{"io.kubernetes.container.name": "app"},
			Linux: &runtimeapi.LinuxContainerConfig{
				Resources: &runtimeapi.LinuxContainerResources{CpuShares: 2, OomScoreAdj: 1000},
				SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
					Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
					NamespaceOptions: &runtimeapi.NamespaceOption{
						Pid: runtimeapi.NamespaceMode_POD,
					},
					MaskedPaths:   slices.Clone(kubeletMaskedPaths),
					ReadonlyPaths: slices.Clone(kubeletReadonlyPaths),
				},
			},
		},
		Sandbox: &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "web-0", Namespace: "default", Uid: "uid-1", Attempt: 0},
			Hostname: "web-0",
			Linux:    &runtimeapi.LinuxPodSandboxConfig{},
		},
		Image: imagespec.ImageConfig{
			Cmd: []string{"sh"},
			Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "FOO=image"},
		},
		RootfsPath: f.rootfs,
		Namespaces: Namespaces{
			NetNS: podNS + "/net",
			IPCNS: podNS + "/ipc",
			UTSNS: podNS + "/uts",
			PIDNS: podNS + "/pid",
		},
		Files: SandboxFiles{
			HostnamePath: "/var/lib/crib/sandboxes/5a4d/hostname",
			ResolvPath:   "/var/lib/crib/sandboxes/5a4d/resolv.conf",
			HostsPath:    "/var/lib/crib/sandboxes/5a4d/hosts",
			ShmPath:      "/run/crib/sandboxes/5a4d/shm",
		},
		CgroupsPath: "/crib/pod-1234/c0ffee",
		HostCaps:    HostCaps{Last: 40},
	}
}

// checkGolden compares spec, as indented JSON with the fixture's temp dir
// written as $TMP, with testdata/name.json, or rewrites it with -update.
func checkGolden(t *testing.T, f *fixture, name string, spec *specs.Spec) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skip("golden files hold amd64 seccomp architectures")
	}
	data, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(string(data), f.base, "$TMP") + "\n"
	path := filepath.Join("testdata", name+".json")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("spec differs from %s (-want +got):\n%s", path, diff)
	}
}

const fileMode0666 = os.FileMode(0o666)
