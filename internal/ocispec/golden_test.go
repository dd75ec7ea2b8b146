package ocispec

import (
	"path/filepath"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestGolden builds specs for realistic configurations and compares them
// with testdata/*.json (go test -update rewrites them).
func TestGolden(t *testing.T) {
	tests := []struct {
		name   string
		root   bool
		modify func(t *testing.T, f *fixture, in *Input)
	}{
		{
			name: "busybox_shared_pid",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Sandbox.Linux.Sysctls = map[string]string{
					"net.ipv4.ip_unprivileged_port_start": "0",
					"kernel.shm_rmid_forced":              "1",
				}
				in.Container.Mounts = []*runtimeapi.Mount{
					{ContainerPath: "/var/run/secrets/kubernetes.io/serviceaccount", HostPath: f.hostDir(t, "token"), Readonly: true},
					{ContainerPath: "/etc/hosts", HostPath: writeFile(t, f.host, "etc-hosts", "127.0.0.1 localhost\n")},
					{ContainerPath: "/dev/termination-log", HostPath: writeFile(t, f.host, "termination-log", "")},
				}
			},
		},
		{
			name: "host_namespaces",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Namespaces = Namespaces{HostNetwork: true, HostIPC: true, HostPID: true}
				in.Sandbox.Hostname = ""
				in.NodeHostname = "node-1"
				in.Files.ShmPath = "/dev/shm"
				in.Container.Command = nil
				in.Container.Args = nil
				in.Image.Entrypoint = []string{"/bin/agent"}
				in.Image.Cmd = []string{"--verbose"}
				in.Image.WorkingDir = "/opt/agent"
				in.Container.Linux.SecurityContext.NamespaceOptions = &runtimeapi.NamespaceOption{
					Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_NODE,
				}
			},
		},
		{
			name: "privileged",
			root: true,
			modify: func(t *testing.T, f *fixture, in *Input) {
				dev := filepath.Join(f.base, "dev")
				mknod(t, filepath.Join(dev, "null"), true, 1, 3)
				mknod(t, filepath.Join(dev, "snd", "timer"), true, 116, 33)
				mknod(t, filepath.Join(dev, "loop0"), false, 7, 0)
				mknod(t, filepath.Join(dev, "pts", "0"), true, 136, 0)
				writeFile(t, dev, "not-a-device", "")
				in.DevDir = dev
				in.CgroupV2 = true
				in.HostCaps = HostCaps{Last: 40}
				in.Container.Linux.SecurityContext.Privileged = true
			},
		},
		{
			name: "user_groups",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Image.User = "nobody"
				sc := in.Container.Linux.SecurityContext
				sc.RunAsUsername = "app"
				sc.SupplementalGroups = []int64{2000, 29}
			},
		},
		{
			name: "mounts_propagation",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.RecursiveReadOnlySupported = true
				in.Container.Mounts = []*runtimeapi.Mount{
					{ContainerPath: "/data/deep/child", HostPath: f.hostDir(t, "child"), Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
					{ContainerPath: "/data", HostPath: f.hostDir(t, "data"), Propagation: runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL},
					{ContainerPath: "/config/", HostPath: f.hostDir(t, "config"), Readonly: true, RecursiveReadOnly: true},
					{ContainerPath: "/dev/shm", HostPath: f.hostDir(t, "bigshm"), MountOptions: []string{"nosuid", "nodev"}},
				}
			},
		},
		{
			name: "caps_add_drop_all",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Container.Linux.SecurityContext.Capabilities = &runtimeapi.Capability{
					DropCapabilities:       []string{"ALL"},
					AddCapabilities:        []string{"NET_BIND_SERVICE", "cap_chown", "SYS_TIME"},
					AddAmbientCapabilities: []string{"CAP_NET_BIND_SERVICE"},
				}
				in.Container.Linux.SecurityContext.NoNewPrivs = true
			},
		},
		{
			name: "readonly_masked",
			modify: func(t *testing.T, f *fixture, in *Input) {
				sc := in.Container.Linux.SecurityContext
				sc.ReadonlyRootfs = true
				sc.MaskedPaths = []string{"/proc/kcore", "/proc/secret"}
				sc.ReadonlyPaths = nil // an empty list, as it arrives
				in.Container.Tty = true
				in.Container.WorkingDir = "/work"
			},
		},
		{
			// A pod in its own user namespace on the host's network: the
			// host's /sys bound read-only, no network or UTS namespace.
			name: "userns_host_network",
			modify: func(t *testing.T, f *fixture, in *Input) {
				pod := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1 << 16, Size: 1 << 16}}
				in.Namespaces = Namespaces{
					IPCNS: "/run/crib/ns/pod-1234/ipc", PIDNS: "/run/crib/ns/pod-1234/pid", HostNetwork: true,
					User: &UserNamespace{Path: "/run/crib/ns/pod-1234/user", UIDs: pod, GIDs: pod},
				}
				in.RecursiveReadOnlySupported = true
				in.Sandbox.Hostname = ""
				in.NodeHostname = "node-1"
				uids := []*runtimeapi.IDMapping{{ContainerId: 0, HostId: 1 << 16, Length: 1 << 16}}
				in.Container.Linux.SecurityContext.NamespaceOptions = &runtimeapi.NamespaceOption{
					Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_POD,
					UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: uids, Gids: uids},
				}
			},
		},
		{
			name: "resources_oom_clamp",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.OOMScoreAdjMin = 0
				in.Hugetlb = true
				in.Container.Linux.Resources = &runtimeapi.LinuxContainerResources{
					CpuPeriod:              100000,
					CpuQuota:               50000,
					CpuShares:              512,
					CpusetCpus:             "0-1",
					CpusetMems:             "0",
					MemoryLimitInBytes:     256 << 20,
					MemorySwapLimitInBytes: 512 << 20,
					OomScoreAdj:            -997,
					HugepageLimits:         []*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 0}, {PageSize: "1GB", Limit: 1 << 30}},
					Unified:                map[string]string{"memory.high": "200000000", "cpu.weight": "20"},
				}
				in.Container.Linux.SecurityContext.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root {
				requireRoot(t)
			}
			f := newFixture(t)
			in := f.input()
			tt.modify(t, f, &in)
			spec, err := Build(in)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			checkGolden(t, f, tt.name, spec)
		})
	}
}
