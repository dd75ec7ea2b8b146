package ocispec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestBuildErrors checks that bad requests fail with the right error class
// and an error naming the offending field.
func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name    string
		modify  func(t *testing.T, f *fixture, in *Input)
		class   error
		wantErr string
	}{
		{
			name:    "no container config",
			modify:  func(t *testing.T, f *fixture, in *Input) { in.Container = nil },
			class:   errdefs.ErrInvalidArgument,
			wantErr: "container config is required",
		},
		{
			name:    "no sandbox config",
			modify:  func(t *testing.T, f *fixture, in *Input) { in.Sandbox = nil },
			class:   errdefs.ErrInvalidArgument,
			wantErr: "sandbox config is required",
		},
		{
			name: "missing mount source",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Container.Mounts = []*runtimeapi.Mount{
					{ContainerPath: "/ok", HostPath: f.hostDir(t, "ok")},
					{ContainerPath: "/gone", HostPath: filepath.Join(f.host, "gone")},
				}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: "mounts[1].host_path",
		},
		{
			name: "empty mount source",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Container.Mounts = []*runtimeapi.Mount{{ContainerPath: "/x"}}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: "mounts[0].host_path is empty",
		},
		{
			name: "relative mount destination",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Container.Mounts = []*runtimeapi.Mount{{ContainerPath: "data", HostPath: f.host}}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: "mounts[0].container_path",
		},
		{
			name: "duplicate mount destination",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Container.Mounts = []*runtimeapi.Mount{
					{ContainerPath: "/data", HostPath: f.host},
					{ContainerPath: "/data/", HostPath: f.host},
				}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: "mounts[1].container_path",
		},
		{
			name: "recursive read-only unsupported",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Container.Mounts = []*runtimeapi.Mount{{ContainerPath: "/c", HostPath: f.host, Readonly: true, RecursiveReadOnly: true}}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: "mounts[0].recursive_read_only",
		},
		{
			name: "recursive read-only without readonly",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.RecursiveReadOnlySupported = true
				in.Container.Mounts = []*runtimeapi.Mount{{ContainerPath: "/c", HostPath: f.host, RecursiveReadOnly: true}}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: "requires readonly",
		},
		{
			name: "recursive read-only with propagation",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.RecursiveReadOnlySupported = true
				in.Container.Mounts = []*runtimeapi.Mount{{
					ContainerPath: "/c", HostPath: f.host, Readonly: true, RecursiveReadOnly: true,
					Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER,
				}}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: "requires private propagation",
		},
		{
			name: "image volume not mounted",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Container.Mounts = []*runtimeapi.Mount{{ContainerPath: "/img", Image: &runtimeapi.ImageSpec{Image: "busybox"}}}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: "mounts[0].image",
		},
		{
			name: "image volume with a host path",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Container.Mounts = []*runtimeapi.Mount{{ContainerPath: "/img", HostPath: f.host, Image: &runtimeapi.ImageSpec{Image: "busybox"}}}
				in.ImageVolumes = map[int]string{0: f.host}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: "mounts[0].image and mounts[0].host_path are both set",
		},
		{
			name: "image volume with propagation",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Container.Mounts = []*runtimeapi.Mount{{ContainerPath: "/img", Image: &runtimeapi.ImageSpec{Image: "busybox"},
					Propagation: runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL}}
				in.ImageVolumes = map[int]string{0: f.host}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: "mounts[0].propagation",
		},
		{
			name: "id-mapped mount",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Container.Mounts = []*runtimeapi.Mount{{ContainerPath: "/m", HostPath: f.host, UidMappings: []*runtimeapi.IDMapping{{Length: 1}}}}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: "mounts[0].uidMappings",
		},
		{
			name: "id-mapped mount with uids only",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Namespaces.User = &UserNamespace{Path: "/run/userns", UIDs: []specs.LinuxIDMapping{{HostID: 1 << 16, Size: 1 << 16}}, GIDs: []specs.LinuxIDMapping{{HostID: 1 << 16, Size: 1 << 16}}}
				in.Container.Mounts = []*runtimeapi.Mount{{ContainerPath: "/m", HostPath: f.host, UidMappings: []*runtimeapi.IDMapping{{Length: 1}}}}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: "gidMappings",
		},
		{
			name: "net sysctl with host network",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Namespaces = Namespaces{HostNetwork: true}
				in.Sandbox.Linux.Sysctls = map[string]string{"net.ipv4.ip_forward": "1"}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: `linux.sysctls["net.ipv4.ip_forward"]`,
		},
		{
			name: "slash-separated net sysctl with host network",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Namespaces = Namespaces{HostNetwork: true}
				in.Sandbox.Linux.Sysctls = map[string]string{"net/core/somaxconn": "1024"}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: `linux.sysctls["net/core/somaxconn"]`,
		},
		{
			name: "ipc sysctl with host ipc",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Namespaces.HostIPC = true
				in.Sandbox.Linux.Sysctls = map[string]string{"kernel.shm_rmid_forced": "1"}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: "host IPC",
		},
		{
			name: "no command at all",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Container.Command, in.Container.Args, in.Image.Cmd = nil, nil, nil
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: "no command",
		},
		{
			name: "unknown capability",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Container.Linux.SecurityContext.Capabilities = &runtimeapi.Capability{AddCapabilities: []string{"CAP_FLY"}}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: `add_capabilities: unknown capability "CAP_FLY"`,
		},
		{
			name: "missing localhost seccomp profile",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Container.Linux.SecurityContext.Seccomp = &runtimeapi.SecurityProfile{
					ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: filepath.Join(f.base, "nope.json"),
				}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: "does not exist",
		},
		{
			name: "localhost apparmor profile",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Container.Linux.SecurityContext.Apparmor = &runtimeapi.SecurityProfile{
					ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "my-profile",
				}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: "apparmor",
		},
		{
			name: "missing device",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Container.Devices = []*runtimeapi.Device{{ContainerPath: "/dev/x", HostPath: filepath.Join(f.base, "nodev"), Permissions: "rw"}}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: "devices[0].host_path",
		},
		{
			name: "device that is a regular file",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Container.Devices = []*runtimeapi.Device{{ContainerPath: "/dev/x", HostPath: writeFile(t, f.host, "file", ""), Permissions: "rw"}}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: "is not a device",
		},
		{
			name: "bad device permissions",
			modify: func(t *testing.T, f *fixture, in *Input) {
				in.Container.Devices = []*runtimeapi.Device{{ContainerPath: "/dev/null", HostPath: "/dev/null", Permissions: "rwx"}}
			},
			class:   errdefs.ErrInvalidArgument,
			wantErr: "devices[0].permissions",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			in := f.input()
			tt.modify(t, f, &in)
			_, err := Build(in)
			if !errors.Is(err, tt.class) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %v containing %q", err, tt.class, tt.wantErr)
			}
		})
	}
}

// TestBuildAllowsSafeSysctls checks that only namespaces shared with the
// host restrict sysctls.
func TestBuildAllowsSafeSysctls(t *testing.T) {
	f := newFixture(t)
	in := f.input()
	in.Namespaces.HostIPC = true
	in.Sandbox.Linux.Sysctls = map[string]string{"net.ipv4.ping_group_range": "0 65535"}
	spec, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"net.ipv4.ping_group_range": "0 65535"}, spec.Linux.Sysctl); diff != "" {
		t.Errorf("sysctls (-want +got):\n%s", diff)
	}
}

func TestBuildDoesNotMutateInput(t *testing.T) {
	f := newFixture(t)
	in := f.input()
	in.Sandbox.Linux.Sysctls = map[string]string{"kernel.msgmax": "8192"}
	spec, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	spec.Linux.Sysctl["kernel.msgmax"] = "1"
	spec.Annotations["io.kubernetes.container.hash"] = "changed"
	spec.Process.Args[0] = "changed"
	if in.Sandbox.Linux.Sysctls["kernel.msgmax"] != "8192" ||
		in.Container.Annotations["io.kubernetes.container.hash"] != "1a2b3c" ||
		in.Container.Command[0] != "sleep" {
		t.Error("Build output shares memory with its input")
	}
}

func TestBuildNewNamespacesAndHostname(t *testing.T) {
	f := newFixture(t)
	in := f.input()
	in.Namespaces = Namespaces{}
	in.CgroupV2 = true
	spec, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []specs.LinuxNamespace{
		{Type: specs.PIDNamespace}, {Type: specs.NetworkNamespace}, {Type: specs.IPCNamespace},
		{Type: specs.UTSNamespace}, {Type: specs.MountNamespace}, {Type: specs.CgroupNamespace},
	}
	if diff := cmp.Diff(want, spec.Linux.Namespaces); diff != "" {
		t.Errorf("namespaces (-want +got):\n%s", diff)
	}
	if spec.Hostname != "web-0" {
		t.Errorf("hostname = %q, want web-0 in a private UTS namespace", spec.Hostname)
	}
}

func TestBuildDevMountReplacesDevChildren(t *testing.T) {
	f := newFixture(t)
	in := f.input()
	in.Container.Mounts = []*runtimeapi.Mount{{ContainerPath: "/dev", HostPath: f.hostDir(t, "dev")}}
	spec, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range spec.Mounts {
		if strings.HasPrefix(m.Destination, "/dev") {
			got = append(got, m.Destination+" "+m.Type)
		}
	}
	if diff := cmp.Diff([]string{"/dev bind"}, got); diff != "" {
		t.Errorf("/dev mounts (-want +got):\n%s", diff)
	}
}

func TestBuildMountSymlinkSourceResolved(t *testing.T) {
	f := newFixture(t)
	target := f.hostDir(t, "real")
	link := filepath.Join(f.host, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	in := f.input()
	in.Container.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: link}}
	spec, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	last := spec.Mounts[len(spec.Mounts)-1]
	if last.Destination != "/data" || last.Source != target {
		t.Errorf("mount = %+v, want /data from %s", last, target)
	}
}

func TestBuildImageVolume(t *testing.T) {
	f := newFixture(t)
	in := f.input()
	vol := f.hostDir(t, "imgvol")
	in.Container.Mounts = []*runtimeapi.Mount{
		{ContainerPath: "/data", HostPath: f.host},
		// Readonly unset and no host path: an image mount is read-only
		// whatever it asks.
		{ContainerPath: "/data/img/", Image: &runtimeapi.ImageSpec{Image: "sha256:abc"}, ImageSubPath: "etc", MountOptions: []string{"noexec"}},
	}
	in.ImageVolumes = map[int]string{1: vol}
	spec, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	want := specs.Mount{Destination: "/data/img", Type: "bind", Source: vol, Options: []string{"rbind", "rprivate", "ro", "noexec"}}
	if diff := cmp.Diff(want, spec.Mounts[len(spec.Mounts)-1]); diff != "" {
		t.Errorf("image mount (-want +got):\n%s", diff)
	}
}

// TestBuildMountOptions: a mount's options follow its access mode, so that
// they add to what readonly, recursive read-only and propagation make, and
// an id-mapped mount keeps them.
func TestBuildMountOptions(t *testing.T) {
	f := newFixture(t)
	in := f.input()
	in.RecursiveReadOnlySupported = true
	pod := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1 << 16, Size: 1 << 16}}
	in.Namespaces.User = &UserNamespace{Path: "/run/crib/ns/user", UIDs: pod, GIDs: pod}
	in.Container.Mounts = []*runtimeapi.Mount{
		{ContainerPath: "/rw", HostPath: f.hostDir(t, "rw"), MountOptions: []string{"noexec", "nosuid", "nodev"},
			Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
		{ContainerPath: "/ro", HostPath: f.hostDir(t, "ro"), Readonly: true, MountOptions: []string{"noexec"}},
		{ContainerPath: "/rro", HostPath: f.hostDir(t, "rro"), Readonly: true, RecursiveReadOnly: true, MountOptions: []string{"nodev"}},
	}
	spec, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"/rw":  {"rbind", "rslave", "rw", "noexec", "nosuid", "nodev"},
		"/ro":  {"rbind", "rprivate", "ro", "noexec"},
		"/rro": {"rbind", "rprivate", "rro", "nodev"},
	}
	for _, m := range spec.Mounts {
		opts, ok := want[m.Destination]
		if !ok {
			continue
		}
		if diff := cmp.Diff(opts, m.Options); diff != "" {
			t.Errorf("%s options (-want +got):\n%s", m.Destination, diff)
		}
		if diff := cmp.Diff(pod, m.UIDMappings); diff != "" {
			t.Errorf("%s uid mappings (-want +got):\n%s", m.Destination, diff)
		}
		delete(want, m.Destination)
	}
	if len(want) > 0 {
		t.Errorf("mounts missing from the spec: %v", want)
	}
}

func TestBuildCRIDevices(t *testing.T) {
	requireRoot(t)
	f := newFixture(t)
	mknod(t, filepath.Join(f.host, "fuse"), true, 10, 229)
	mknod(t, filepath.Join(f.host, "snd", "pcmC0D0p"), true, 116, 16)
	mknod(t, filepath.Join(f.host, "snd", "sub", "ctl"), true, 116, 0)
	in := f.input()
	in.Container.Devices = []*runtimeapi.Device{
		{ContainerPath: "/dev/fuse", HostPath: filepath.Join(f.host, "fuse"), Permissions: "rwm"},
		{ContainerPath: "/dev/snd", HostPath: filepath.Join(f.host, "snd"), Permissions: "r"},
	}
	spec, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	mode, zero := ptr(fileMode0666), ptr(uint32(0))
	wantDevs := []specs.LinuxDevice{
		{Path: "/dev/fuse", Type: "c", Major: 10, Minor: 229, FileMode: mode, UID: zero, GID: zero},
		{Path: "/dev/snd/pcmC0D0p", Type: "c", Major: 116, Minor: 16, FileMode: mode, UID: zero, GID: zero},
		{Path: "/dev/snd/sub/ctl", Type: "c", Major: 116, Minor: 0, FileMode: mode, UID: zero, GID: zero},
	}
	if diff := cmp.Diff(wantDevs, spec.Linux.Devices); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	i64 := func(v int64) *int64 { return &v }
	wantRules := []specs.LinuxDeviceCgroup{
		{Allow: false, Access: "rwm"},
		{Allow: true, Type: "c", Major: i64(10), Minor: i64(229), Access: "rwm"},
		{Allow: true, Type: "c", Major: i64(116), Minor: i64(16), Access: "r"},
		{Allow: true, Type: "c", Major: i64(116), Minor: i64(0), Access: "r"},
	}
	if diff := cmp.Diff(wantRules, spec.Linux.Resources.Devices); diff != "" {
		t.Errorf("device rules (-want +got):\n%s", diff)
	}
}

// TestBuildMinimalConfig builds from the least a CRI client may send: no
// linux sections, no metadata beyond names, an image with only a Cmd.
func TestBuildMinimalConfig(t *testing.T) {
	in := Input{
		Container:  &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}},
		Sandbox:    &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p"}},
		RootfsPath: t.TempDir(),
	}
	in.Image.Cmd = []string{"/pause"}
	spec, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/pause"}, spec.Process.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(specs.User{AdditionalGids: []uint32{0}}, spec.Process.User); diff != "" {
		t.Errorf("user (-want +got):\n%s", diff)
	}
	if spec.Linux.Seccomp != nil || spec.Process.OOMScoreAdj != nil || spec.Hostname != "" || len(spec.Process.Capabilities.Bounding) != 14 {
		t.Errorf("unexpected defaults: seccomp %v, oom %v, hostname %q, caps %v",
			spec.Linux.Seccomp, spec.Process.OOMScoreAdj, spec.Hostname, spec.Process.Capabilities.Bounding)
	}
}

func TestBuildUserNamespace(t *testing.T) {
	f := newFixture(t)
	in := f.input()
	pod := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1 << 16, Size: 1 << 16}}
	own := []*runtimeapi.IDMapping{{ContainerId: 0, HostId: 5 << 16, Length: 1 << 16}}
	in.Namespaces.User = &UserNamespace{Path: "/run/crib/ns/user", UIDs: pod, GIDs: pod}
	in.Container.Mounts = []*runtimeapi.Mount{
		{ContainerPath: "/data", HostPath: f.hostDir(t, "data")},
		{ContainerPath: "/own", HostPath: f.hostDir(t, "own"), UidMappings: own, GidMappings: own},
		// The kubelet sends the pod's mappings with an image mount too;
		// its layers are mapped where they are mounted, not here.
		{ContainerPath: "/img", Image: &runtimeapi.ImageSpec{Image: "sha256:abc"}, UidMappings: own, GidMappings: own},
	}
	in.ImageVolumes = map[int]string{2: f.hostDir(t, "imgvol")}
	spec, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := spec.Linux.Namespaces[0]; got != (specs.LinuxNamespace{Type: specs.UserNamespace, Path: "/run/crib/ns/user"}) {
		t.Errorf("first namespace = %+v, want the pod's user namespace", got)
	}
	if diff := cmp.Diff(pod, spec.Linux.UIDMappings); diff != "" {
		t.Errorf("uid mappings (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(pod, spec.Linux.GIDMappings); diff != "" {
		t.Errorf("gid mappings (-want +got):\n%s", diff)
	}
	// The CRI mounts from the host are mapped, each by its own mapping if
	// it names one, else the pod's; the pod's files and /dev/shm (the pod's
	// root's already), an image mount and the kernel file systems are not.
	wantMapped := map[string][]specs.LinuxIDMapping{
		"/etc/hostname": nil, "/etc/resolv.conf": nil, "/etc/hosts": nil, "/dev/shm": nil,
		"/data": pod, "/own": IDMappings(own), "/img": nil,
	}
	for _, m := range spec.Mounts {
		want := wantMapped[m.Destination]
		if m.Type != "bind" {
			want = nil
		}
		if diff := cmp.Diff(want, m.UIDMappings); diff != "" {
			t.Errorf("%s uid mappings (-want +got):\n%s", m.Destination, diff)
		}
		if diff := cmp.Diff(want, m.GIDMappings); diff != "" {
			t.Errorf("%s gid mappings (-want +got):\n%s", m.Destination, diff)
		}
		delete(wantMapped, m.Destination)
	}
	if len(wantMapped) > 0 {
		t.Errorf("mounts missing from the spec: %v", wantMapped)
	}
}

// TestBuildSysInUserNamespaceOnHostNetwork: only a container in its pod's
// user namespace on the host network, which could not mount a sysfs, gets
// the host's /sys bound, read-only all the way down where "rro" works.
func TestBuildSysInUserNamespaceOnHostNetwork(t *testing.T) {
	pod := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1 << 16, Size: 1 << 16}}
	sysfs := specs.Mount{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}}
	bind := func(mode string) specs.Mount {
		return specs.Mount{Destination: "/sys", Type: "bind", Source: "/sys", Options: []string{"rbind", mode, "nosuid", "nodev", "noexec"}}
	}
	tests := []struct {
		name        string
		userns, rro bool
		hostNetwork bool
		want        specs.Mount
	}{
		{name: "userns, host network", userns: true, hostNetwork: true, rro: true, want: bind("rro")},
		{name: "userns, host network, no rro", userns: true, hostNetwork: true, want: bind("ro")},
		{name: "userns, pod network", userns: true, rro: true, want: sysfs},
		{name: "host users, host network", hostNetwork: true, rro: true, want: sysfs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := newFixture(t).input()
			in.RecursiveReadOnlySupported = tt.rro
			in.Namespaces.HostNetwork = tt.hostNetwork
			if tt.userns {
				in.Namespaces.User = &UserNamespace{Path: "/run/crib/ns/user", UIDs: pod, GIDs: pod}
			}
			spec, err := Build(in)
			if err != nil {
				t.Fatal(err)
			}
			var got []specs.Mount
			for _, m := range spec.Mounts {
				if m.Destination == "/sys" {
					got = append(got, m)
				}
			}
			if diff := cmp.Diff([]specs.Mount{tt.want}, got); diff != "" {
				t.Errorf("/sys mounts (-want +got):\n%s", diff)
			}
		})
	}
}
