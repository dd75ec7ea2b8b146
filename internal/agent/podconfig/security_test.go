package podconfig

import (
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/userns"
)

func podNS() *runtimeapi.NamespaceOption {
	return &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD,
		UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}}
}

func unconfined() *runtimeapi.SecurityProfile {
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
}

func TestContainerSecurityContext(t *testing.T) {
	tests := []struct {
		name  string
		pod   *corev1.PodSecurityContext
		c     *corev1.SecurityContext
		image *ImageUser
		opts  Options
		want  *runtimeapi.LinuxContainerSecurityContext
	}{
		{
			name:  "nothing set: the image's uid",
			image: &ImageUser{UID: ptr(int64(1000))},
			want:  &runtimeapi.LinuxContainerSecurityContext{RunAsUser: &runtimeapi.Int64Value{Value: 1000}, NamespaceOptions: podNS(), Seccomp: unconfined()},
		},
		{
			name:  "image user by name",
			image: &ImageUser{Username: "nginx"},
			want:  &runtimeapi.LinuxContainerSecurityContext{RunAsUsername: "nginx", NamespaceOptions: podNS(), Seccomp: unconfined()},
		},
		{
			name:  "image with no user runs as root",
			image: &ImageUser{},
			want:  &runtimeapi.LinuxContainerSecurityContext{RunAsUser: &runtimeapi.Int64Value{Value: 0}, NamespaceOptions: podNS(), Seccomp: unconfined()},
		},
		{
			name: "image user unknown: left to the runtime",
			want: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: podNS(), Seccomp: unconfined()},
		},
		{
			name:  "pod run-as, container overrides the user",
			pod:   &corev1.PodSecurityContext{RunAsUser: ptr(int64(1)), RunAsGroup: ptr(int64(2)), FSGroup: ptr(int64(3)), SupplementalGroups: []int64{4, 5}},
			c:     &corev1.SecurityContext{RunAsUser: ptr(int64(10))},
			image: &ImageUser{UID: ptr(int64(1000))},
			want: &runtimeapi.LinuxContainerSecurityContext{
				RunAsUser: &runtimeapi.Int64Value{Value: 10}, RunAsGroup: &runtimeapi.Int64Value{Value: 2},
				SupplementalGroups: []int64{3, 4, 5}, NamespaceOptions: podNS(), Seccomp: unconfined(),
			},
		},
		{
			name: "strict supplemental groups",
			pod:  &corev1.PodSecurityContext{SupplementalGroupsPolicy: ptr(corev1.SupplementalGroupsPolicyStrict)},
			want: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: podNS(), Seccomp: unconfined(),
				SupplementalGroupsPolicy: runtimeapi.SupplementalGroupsPolicy_Strict},
		},
		{
			name: "capabilities, privileged, read-only root, no privilege escalation",
			c: &corev1.SecurityContext{
				Capabilities:             &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "SYS_TIME"}, Drop: []corev1.Capability{"ALL"}},
				Privileged:               ptr(true),
				ReadOnlyRootFilesystem:   ptr(true),
				AllowPrivilegeEscalation: ptr(false),
			},
			want: &runtimeapi.LinuxContainerSecurityContext{
				Capabilities: &runtimeapi.Capability{AddCapabilities: []string{"NET_ADMIN", "SYS_TIME"}, DropCapabilities: []string{"ALL"}},
				Privileged:   true, ReadonlyRootfs: true, NoNewPrivs: true,
				NamespaceOptions: podNS(), Seccomp: unconfined(),
			},
		},
		{
			name: "allowPrivilegeEscalation true leaves no_new_privs off",
			c:    &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(true)},
			want: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: podNS(), Seccomp: unconfined()},
		},
		{
			name: "seccomp default on",
			opts: Options{SeccompDefault: true},
			want: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: podNS(),
				Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}},
		},
		{
			name: "pod seccomp",
			pod:  &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			want: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: podNS(),
				Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}},
		},
		{
			name: "container seccomp over pod's",
			pod:  &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			c:    &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}},
			opts: Options{SeccompDefault: true},
			want: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: podNS(), Seccomp: unconfined()},
		},
		{
			name: "localhost seccomp under the profile root",
			c:    &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("profiles/audit.json")}},
			opts: Options{SeccompProfileRoot: "/var/lib/crib-agent/seccomp"},
			want: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: podNS(),
				Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/var/lib/crib-agent/seccomp/profiles/audit.json"}},
		},
		{
			name: "apparmor",
			pod:  &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr("k8s-deny")}},
			want: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: podNS(), Seccomp: unconfined(),
				Apparmor: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "k8s-deny"},
				//lint:ignore SA1019 the deprecated field is sent too, for older runtimes
				ApparmorProfile: "localhost/k8s-deny"},
		},
		{
			name: "selinux from the pod",
			pod:  &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t", Level: "s0:c1"}},
			want: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: podNS(), Seccomp: unconfined(),
				SelinuxOptions: &runtimeapi.SELinuxOption{Type: "spc_t", Level: "s0:c1"}},
		},
		{
			name:  "run as non-root satisfied by the image",
			pod:   &corev1.PodSecurityContext{RunAsNonRoot: ptr(true)},
			image: &ImageUser{UID: ptr(int64(65534))},
			want:  &runtimeapi.LinuxContainerSecurityContext{RunAsUser: &runtimeapi.Int64Value{Value: 65534}, NamespaceOptions: podNS(), Seccomp: unconfined()},
		},
		{
			name:  "run as non-root satisfied by runAsUser despite a root image",
			c:     &corev1.SecurityContext{RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(7))},
			image: &ImageUser{},
			want:  &runtimeapi.LinuxContainerSecurityContext{RunAsUser: &runtimeapi.Int64Value{Value: 7}, NamespaceOptions: podNS(), Seccomp: unconfined()},
		},
		{
			name:  "container turns run-as-non-root off",
			pod:   &corev1.PodSecurityContext{RunAsNonRoot: ptr(true)},
			c:     &corev1.SecurityContext{RunAsNonRoot: ptr(false)},
			image: &ImageUser{},
			want:  &runtimeapi.LinuxContainerSecurityContext{RunAsUser: &runtimeapi.Int64Value{Value: 0}, NamespaceOptions: podNS(), Seccomp: unconfined()},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(func(p *corev1.Pod) {
				p.Spec.SecurityContext = tt.pod
				p.Spec.Containers[0].SecurityContext = tt.c
			})
			cfg, err := ContainerConfig(testInput(pod, func(in *ContainerInput) { in.ImageUser = tt.image }), tt.opts)
			checkErr(t, err, nil)
			// Each container here has procMount Default (TestProcMount
			// has the others): the kubelet's lists.
			tt.want.MaskedPaths, tt.want.ReadonlyPaths = kubeletMaskedPaths, kubeletReadonlyPaths
			if d := diffProto(tt.want, cfg.Linux.SecurityContext); d != "" {
				t.Errorf("security context (-want +got):\n%s", d)
			}
		})
	}
}

// kubeletMaskedPaths and kubeletReadonlyPaths are what the kubelet sends
// for procMount Default (k8s.io/kubernetes pkg/securitycontext,
// ConvertToRuntimeMaskedPaths and ConvertToRuntimeReadonlyPaths), written
// out here to check the agent's copy.
var (
	kubeletMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
		"/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	kubeletReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// TestProcMount sends the kubelet's lists for procMount Default (unset
// too, and privileged: the runtime drops them there) and empty lists for
// Unmasked, which only a pod with hostUsers: false may ask for.
func TestProcMount(t *testing.T) {
	block := &userns.Range{First: 65536, Length: 65536}
	tests := []struct {
		name       string
		hostUsers  *bool
		privileged bool
		pm         *corev1.ProcMountType
		masked     []string
		readonly   []string
		err        string
	}{
		{name: "unset", masked: kubeletMaskedPaths, readonly: kubeletReadonlyPaths},
		{name: "Default", pm: ptr(corev1.DefaultProcMount), masked: kubeletMaskedPaths, readonly: kubeletReadonlyPaths},
		{name: "Default in a user namespace", hostUsers: ptr(false), pm: ptr(corev1.DefaultProcMount), masked: kubeletMaskedPaths, readonly: kubeletReadonlyPaths},
		{name: "Default, privileged", privileged: true, masked: kubeletMaskedPaths, readonly: kubeletReadonlyPaths},
		{name: "Unmasked in a user namespace", hostUsers: ptr(false), pm: ptr(corev1.UnmaskedProcMount), masked: []string{}, readonly: []string{}},
		{name: "Unmasked with the node's users", pm: ptr(corev1.UnmaskedProcMount), err: "procMount Unmasked needs spec.hostUsers false"},
		{name: "Unmasked with hostUsers true", hostUsers: ptr(true), pm: ptr(corev1.UnmaskedProcMount), err: "procMount Unmasked needs spec.hostUsers false"},
		{name: "unknown", pm: ptr(corev1.ProcMountType("Masked")), err: `procMount "Masked" is not Default or Unmasked`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(func(p *corev1.Pod) {
				p.Spec.HostUsers = tt.hostUsers
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ProcMount: tt.pm, Privileged: ptr(tt.privileged)}
			})
			cfg, err := ContainerConfig(testInput(pod, func(in *ContainerInput) { in.UserNamespace = block }), Options{})
			if tt.err != "" {
				checkErr(t, err, errdefs.ErrInvalidArgument, tt.err, `"app"`)
				return
			}
			checkErr(t, err, nil)
			sc := cfg.Linux.SecurityContext
			// Empty, not absent: what goes on the wire is the same, but
			// this is what the kubelet makes.
			if sc.MaskedPaths == nil || sc.ReadonlyPaths == nil {
				t.Errorf("masked %#v, read-only %#v: want lists, not nil", sc.MaskedPaths, sc.ReadonlyPaths)
			}
			if d := cmp.Diff(tt.masked, sc.MaskedPaths); d != "" {
				t.Errorf("masked paths (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.readonly, sc.ReadonlyPaths); d != "" {
				t.Errorf("read-only paths (-want +got):\n%s", d)
			}
		})
	}
}

func TestContainerSecurityErrors(t *testing.T) {
	nonRoot := &corev1.PodSecurityContext{RunAsNonRoot: ptr(true)}
	tests := []struct {
		name  string
		pod   *corev1.PodSecurityContext
		c     *corev1.SecurityContext
		image *ImageUser
		opts  Options
		msg   []string
	}{
		{"runAsUser 0", nonRoot, &corev1.SecurityContext{RunAsUser: ptr(int64(0))}, &ImageUser{UID: ptr(int64(5))}, Options{}, []string{"runAsUser 0"}},
		{"image uid 0", nonRoot, nil, &ImageUser{UID: ptr(int64(0))}, Options{}, []string{"will run as root", `"app"`}},
		{"image without user", nonRoot, nil, &ImageUser{}, Options{}, []string{"will run as root"}},
		{"non-numeric image user", nonRoot, nil, &ImageUser{Username: "nginx"}, Options{}, []string{"non-numeric", "nginx"}},
		{"unknown image user", nonRoot, nil, nil, Options{}, []string{"unknown"}},
		{"invalid image uid", nonRoot, nil, &ImageUser{UID: ptr(int64(1) << 40)}, Options{}, []string{"invalid user id"}},
		{"container asks for non-root", nil, &corev1.SecurityContext{RunAsNonRoot: ptr(true)}, &ImageUser{}, Options{}, []string{"root"}},
		{"localhost seccomp without profile", nil, &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}},
			nil, Options{}, []string{"localhostProfile"}},
		{"localhost seccomp without root", nil, &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("p.json")}},
			nil, Options{}, []string{"p.json", "relative"}},
		{"unmasked proc with the node's users", nil, &corev1.SecurityContext{ProcMount: ptr(corev1.UnmaskedProcMount)}, nil, Options{}, []string{"procMount", "hostUsers"}},
		{"bad supplemental groups policy", &corev1.PodSecurityContext{SupplementalGroupsPolicy: ptr(corev1.SupplementalGroupsPolicy("Loose"))}, nil, nil, Options{}, []string{"Loose"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(func(p *corev1.Pod) {
				p.Spec.SecurityContext = tt.pod
				p.Spec.Containers[0].SecurityContext = tt.c
			})
			_, err := ContainerConfig(testInput(pod, func(in *ContainerInput) { in.ImageUser = tt.image }), tt.opts)
			checkErr(t, err, errdefs.ErrInvalidArgument, tt.msg...)
		})
	}
}

func TestNamespaces(t *testing.T) {
	const (
		pod = runtimeapi.NamespaceMode_POD
		ctr = runtimeapi.NamespaceMode_CONTAINER
		nod = runtimeapi.NamespaceMode_NODE
	)
	hostUsers := &runtimeapi.UserNamespace{Mode: nod}
	block := &userns.Range{First: 196608, Length: 65536}
	ids := []*runtimeapi.IDMapping{{HostId: 196608, ContainerId: 0, Length: 65536}}
	own := &runtimeapi.UserNamespace{Mode: pod, Uids: ids, Gids: ids}
	tests := []struct {
		name   string
		mutate func(*corev1.PodSpec)
		userNS *userns.Range
		want   *runtimeapi.NamespaceOption
	}{
		{"defaults", func(*corev1.PodSpec) {}, nil, &runtimeapi.NamespaceOption{Network: pod, Pid: ctr, Ipc: pod, UsernsOptions: hostUsers}},
		{"host network", func(s *corev1.PodSpec) { s.HostNetwork = true }, nil, &runtimeapi.NamespaceOption{Network: nod, Pid: ctr, Ipc: pod, UsernsOptions: hostUsers}},
		{"host pid", func(s *corev1.PodSpec) { s.HostPID = true }, nil, &runtimeapi.NamespaceOption{Network: pod, Pid: nod, Ipc: pod, UsernsOptions: hostUsers}},
		{"host ipc", func(s *corev1.PodSpec) { s.HostIPC = true }, nil, &runtimeapi.NamespaceOption{Network: pod, Pid: ctr, Ipc: nod, UsernsOptions: hostUsers}},
		{"shared pid", func(s *corev1.PodSpec) { s.ShareProcessNamespace = ptr(true) }, nil, &runtimeapi.NamespaceOption{Network: pod, Pid: pod, Ipc: pod, UsernsOptions: hostUsers}},
		{"host pid wins over shared", func(s *corev1.PodSpec) { s.HostPID, s.ShareProcessNamespace = true, ptr(true) }, nil,
			&runtimeapi.NamespaceOption{Network: pod, Pid: nod, Ipc: pod, UsernsOptions: hostUsers}},
		{"host users true is the node's", func(s *corev1.PodSpec) { s.HostUsers = ptr(true) }, nil, &runtimeapi.NamespaceOption{Network: pod, Pid: ctr, Ipc: pod, UsernsOptions: hostUsers}},
		{"a block given to a host users pod is not used", func(*corev1.PodSpec) {}, block, &runtimeapi.NamespaceOption{Network: pod, Pid: ctr, Ipc: pod, UsernsOptions: hostUsers}},
		{"host users false maps the pod's block", func(s *corev1.PodSpec) { s.HostUsers = ptr(false) }, block,
			&runtimeapi.NamespaceOption{Network: pod, Pid: ctr, Ipc: pod, UsernsOptions: own}},
		{"host users false with a shared pid namespace", func(s *corev1.PodSpec) { s.HostUsers, s.ShareProcessNamespace = ptr(false), ptr(true) }, block,
			&runtimeapi.NamespaceOption{Network: pod, Pid: pod, Ipc: pod, UsernsOptions: own}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod(func(p *corev1.Pod) { tt.mutate(&p.Spec) })
			sb, err := SandboxConfig(p, 0, tt.userNS, Options{})
			checkErr(t, err, nil)
			if d := diffProto(tt.want, sb.Linux.SecurityContext.NamespaceOptions); d != "" {
				t.Errorf("sandbox namespaces (-want +got):\n%s", d)
			}
			c, err := ContainerConfig(testInput(p, func(in *ContainerInput) { in.UserNamespace = tt.userNS }), Options{})
			checkErr(t, err, nil)
			if d := diffProto(tt.want, c.Linux.SecurityContext.NamespaceOptions); d != "" {
				t.Errorf("container namespaces (-want +got):\n%s", d)
			}
		})
	}
}

func TestUserNamespaceRefused(t *testing.T) {
	block := &userns.Range{First: 65536, Length: 65536}
	tests := []struct {
		name   string
		mutate func(*corev1.PodSpec)
		userNS *userns.Range
		class  error
		msg    string
	}{
		{"no block", func(*corev1.PodSpec) {}, nil, errdefs.ErrFailedPrecondition, "no range of host ids"},
		{"an empty block", func(*corev1.PodSpec) {}, &userns.Range{}, errdefs.ErrFailedPrecondition, "no range of host ids"},
		{"host network", func(s *corev1.PodSpec) { s.HostNetwork = true }, block, errdefs.ErrInvalidArgument, "spec.hostNetwork is forbidden when spec.hostUsers is false"},
		{"host pid", func(s *corev1.PodSpec) { s.HostPID = true }, block, errdefs.ErrInvalidArgument, "spec.hostPID is forbidden"},
		{"host ipc", func(s *corev1.PodSpec) { s.HostIPC = true }, block, errdefs.ErrInvalidArgument, "spec.hostIPC is forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod(func(p *corev1.Pod) { p.Spec.HostUsers = ptr(false); tt.mutate(&p.Spec) })
			_, err := SandboxConfig(p, 0, tt.userNS, Options{})
			checkErr(t, err, tt.class, tt.msg)
			_, err = ContainerConfig(testInput(p, func(in *ContainerInput) { in.UserNamespace = tt.userNS }), Options{})
			checkErr(t, err, tt.class, tt.msg)
		})
	}
}
