package crivalidate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// wantField fails the test unless err is nil for want "" or an
// InvalidArgument naming want.
func wantField(t *testing.T, name string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v, want no error", name, err)
	case want != "" && err == nil:
		t.Errorf("%s: no error, want InvalidArgument naming %s", name, want)
	case want != "" && (!errdefs.IsInvalidArgument(err) || !strings.HasPrefix(err.Error(), want)):
		t.Errorf("%s: %v, want InvalidArgument naming %s", name, err, want)
	}
}

func TestName(t *testing.T) {
	tests := []struct {
		name, v  string
		required bool
		want     string
	}{
		{"critest's pod name", "create-PodSandbox-for-container-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", true, ""},
		{"longest", strings.Repeat("a", MaxNameLen), true, ""},
		{"empty, optional", "", false, ""},
		{"empty, required", "", true, "f"},
		{"too long", strings.Repeat("a", MaxNameLen+1), true, "f"},
		{"newline", "a\nb", true, "f"},
		{"NUL", "a\x00", true, "f"},
	}
	for _, tt := range tests {
		wantField(t, tt.name, Name("f", tt.v, tt.required), tt.want)
	}
}

func TestLabelsAndAnnotations(t *testing.T) {
	big := strings.Repeat("v", 200<<10)
	tests := []struct {
		name   string
		m      map[string]string
		labels string // the field Labels must name, "" for valid
		annots string // the same for Annotations
	}{
		{"kubelet's", map[string]string{"io.kubernetes.pod.name": strings.Repeat("p", 253), "io.kubernetes.pod.uid": "0f1e2d3c-4b5a", "app": "web"}, "", ""},
		{"critest's", map[string]string{"foo": "bar", "abc": "def", "sandbox-platform": "linux/amd64"}, "", ""},
		{"empty value", map[string]string{"a": ""}, "", ""},
		{"empty key", map[string]string{"": "x"}, `m[""]`, `m[""]`},
		{"key with a space", map[string]string{"a b": "x"}, `m["a b"]`, `m["a b"]`},
		{"key's prefix in capitals", map[string]string{"Example.COM/a": "x"}, `m["Example.COM/a"]`, ""},
		{"key's name too long", map[string]string{strings.Repeat("k", 64): "x"}, "m[", "m["},
		{"label value too long", map[string]string{"a": strings.Repeat("v", MaxLabelValueLen+1)}, `m["a"]`, ""},
		{"value with odd characters", map[string]string{"a": "{\"json\": [1, 2]}"}, "", ""},
		{"total over the bound", map[string]string{"a": big, "b": big}, `m[`, "m:"},
		{"total at the bound", map[string]string{"a": strings.Repeat("v", MaxMapTotal-1)}, `m["a"]`, ""},
		{"total one over the bound", map[string]string{"a": strings.Repeat("v", MaxMapTotal)}, `m["a"]`, "m:"},
	}
	for _, tt := range tests {
		wantField(t, tt.name+" (labels)", Labels("m", tt.m), tt.labels)
		wantField(t, tt.name+" (annotations)", Annotations("m", tt.m), tt.annots)
	}
}

func TestEnum(t *testing.T) {
	wantField(t, "known", Enum("mode", runtimeapi.NamespaceMode_TARGET, runtimeapi.NamespaceMode_name), "")
	wantField(t, "zero", Enum("mode", runtimeapi.NamespaceMode(0), runtimeapi.NamespaceMode_name), "")
	wantField(t, "unknown", Enum("mode", runtimeapi.NamespaceMode(42), runtimeapi.NamespaceMode_name), "mode")
	wantField(t, "negative", Enum("p", runtimeapi.Protocol(-1), runtimeapi.Protocol_name), "p")
}

func TestPaths(t *testing.T) {
	abs := []struct {
		p     string
		clean bool
		want  string
	}{
		{"/var/log/pods/ns_name_uid", true, ""},
		{"/var/log/pods/", true, "d"},
		{"/var/log/pods/", false, ""},
		{"/var/log/../etc", true, "d"},
		{"/var//log", true, "d"},
		{"var/log", true, "d"},
		{"var/log", false, "d"},
		{"", true, "d"},
		{"/a\x00b", true, "d"},
		{"/" + strings.Repeat("a", MaxPathLen), false, "d"},
	}
	for _, tt := range abs {
		wantField(t, "AbsPath "+tt.p, AbsPath("d", tt.p, tt.clean), tt.want)
	}
	rel := []struct{ p, want string }{
		{"ctr/0.log", ""},
		{"ctr.log", ""},
		{"..log", ""},
		{"/ctr/0.log", "p"},
		{"../0.log", "p"},
		{"ctr/../../0.log", "p"},
		{"ctr/../0.log", "p"},
		{"./0.log", "p"},
		{"ctr//0.log", "p"},
		{"ctr/", "p"},
		{".", "p"},
		{"..", "p"},
		{"", "p"},
		{"a\x00", "p"},
	}
	for _, tt := range rel {
		wantField(t, "RelPath "+tt.p, RelPath("p", tt.p), tt.want)
	}
}

func TestSysctls(t *testing.T) {
	own := HostNamespaces{}
	tests := []struct {
		name string
		k    string
		host HostNamespaces
		ok   bool
	}{
		// The kubelet's safe sysctls and critest's.
		{"safe net", "net.ipv4.ip_local_port_range", own, true},
		{"safe net, slash form", "net/ipv4/ping_group_range", own, true},
		{"interface with a dot, slash form", "net/ipv4/conf/eth0.100/rp_filter", own, true},
		{"shm_rmid_forced", "kernel.shm_rmid_forced", own, true},
		{"mqueue", "fs.mqueue.msg_max", own, true},
		{"sem", "kernel.sem", own, true},
		{"msgmax", "kernel.msgmax", own, true},
		{"domainname", "kernel.domainname", own, true},
		{"net with host network", "net.core.somaxconn", HostNamespaces{Network: true}, false},
		{"slash-form net with host network", "net/core/somaxconn", HostNamespaces{Network: true}, false},
		{"net with host IPC", "net.core.somaxconn", HostNamespaces{IPC: true}, true},
		{"IPC with host IPC", "kernel.shmmax", HostNamespaces{IPC: true}, false},
		{"mqueue with host IPC", "fs.mqueue.queues_max", HostNamespaces{IPC: true}, false},
		{"IPC with host network", "kernel.msgmnb", HostNamespaces{Network: true}, true},
		{"domainname with host network", "kernel.domainname", HostNamespaces{Network: true}, false},
		{"hostname", "kernel.hostname", own, false},
		{"user without userns", "user.max_user_namespaces", own, false},
		{"user with userns", "user.max_user_namespaces", HostNamespaces{UserNS: true}, true},
		{"kernel, not namespaced", "kernel.panic", own, false},
		{"kernel.shm prefix alone", "kernel.shm", own, false},
		{"vm", "vm.overcommit_memory", own, false},
		{"fs outside mqueue", "fs.file-max", own, false},
		{"empty", "", own, false},
		{"empty component", "net..ipv4", own, false},
		{"slash form going up", "net/ipv4/conf/../../../kernel/panic", own, false},
		{"dot form going up", "net.ipv4.//.panic", own, false},
		{"trailing dot", "net.ipv4.", own, false},
	}
	for _, tt := range tests {
		err := Sysctls("sysctls", map[string]string{tt.k: "1"}, tt.host)
		want := ""
		if !tt.ok {
			want = "sysctls["
		}
		wantField(t, tt.name, err, want)
	}
	wantField(t, "value too long", Sysctls("sysctls", map[string]string{"net.core.somaxconn": strings.Repeat("1", 4097)}, own), "sysctls[")
}

func TestNormalizeSysctl(t *testing.T) {
	for in, want := range map[string]string{
		"net.ipv4.ip_forward":              "net.ipv4.ip_forward",
		"net/ipv4/ip_forward":              "net.ipv4.ip_forward",
		"net/ipv4/conf/eno2.100/rp_filter": "net.ipv4.conf.eno2/100.rp_filter",
		"net.ipv4.conf.eno2/100.rp_filter": "net.ipv4.conf.eno2/100.rp_filter",
		"kernel":                           "kernel",
	} {
		if got := NormalizeSysctl(in); got != want {
			t.Errorf("NormalizeSysctl(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResources(t *testing.T) {
	tests := []struct {
		r     *runtimeapi.LinuxContainerResources
		field string // "" for valid
	}{
		{nil, ""},
		{&runtimeapi.LinuxContainerResources{CpuShares: 1024, CpuQuota: -1, CpuPeriod: 100000, MemoryLimitInBytes: 1 << 30, MemorySwapLimitInBytes: -1, OomScoreAdj: -997}, ""},
		{&runtimeapi.LinuxContainerResources{OomScoreAdj: 1000, CpusetCpus: "0-3", Unified: map[string]string{"memory.high": "max"}}, ""},
		{&runtimeapi.LinuxContainerResources{CpuPeriod: -5}, "r.cpu_period"},
		{&runtimeapi.LinuxContainerResources{CpuPeriod: 999}, "r.cpu_period"},
		{&runtimeapi.LinuxContainerResources{CpuPeriod: 1000001}, "r.cpu_period"},
		{&runtimeapi.LinuxContainerResources{CpuQuota: -2}, "r.cpu_quota"},
		{&runtimeapi.LinuxContainerResources{CpuQuota: 999}, "r.cpu_quota"},
		{&runtimeapi.LinuxContainerResources{CpuShares: -1}, "r.cpu_shares"},
		{&runtimeapi.LinuxContainerResources{CpuShares: 262145}, "r.cpu_shares"},
		{&runtimeapi.LinuxContainerResources{MemoryLimitInBytes: -1}, "r.memory_limit_in_bytes"},
		{&runtimeapi.LinuxContainerResources{MemorySwapLimitInBytes: -2}, "r.memory_swap_limit_in_bytes"},
		{&runtimeapi.LinuxContainerResources{OomScoreAdj: 1001}, "r.oom_score_adj"},
		{&runtimeapi.LinuxContainerResources{OomScoreAdj: -1001}, "r.oom_score_adj"},
		{&runtimeapi.LinuxContainerResources{CpusetMems: "0\x00"}, "r.cpuset_mems"},
		{&runtimeapi.LinuxContainerResources{HugepageLimits: []*runtimeapi.HugepageLimit{{Limit: 1}}}, "r.hugepage_limits[0].page_size"},
		{&runtimeapi.LinuxContainerResources{Unified: map[string]string{"../memory.max": "1"}}, "r.unified"},
		{&runtimeapi.LinuxContainerResources{Unified: map[string]string{"memory.max": strings.Repeat("9", 4097)}}, "r.unified"},
	}
	for _, tt := range tests {
		wantField(t, tt.r.String(), Resources("r", tt.r), tt.field)
	}
}

func TestSecurityContext(t *testing.T) {
	uid := func(v int64) *runtimeapi.Int64Value { return &runtimeapi.Int64Value{Value: v} }
	tests := []struct {
		name string
		s    SecurityFields
		want string
	}{
		{"empty", SecurityFields{}, ""},
		{"kubelet's", SecurityFields{
			RunAsUser: uid(1000), RunAsGroup: uid(0), SupplementalGroups: []int64{1000, 2000},
			SupplementalGroupsPolicy: runtimeapi.SupplementalGroupsPolicy_Strict,
			Seccomp:                  &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/var/lib/kubelet/seccomp/p.json"},
			SELinux:                  &runtimeapi.SELinuxOption{Level: "s0:c1,c2"},
		}, ""},
		{"negative uid", SecurityFields{RunAsUser: uid(-1)}, "sc.run_as_user"},
		{"uid -1 as unsigned", SecurityFields{RunAsGroup: uid(1<<32 - 1)}, "sc.run_as_group"},
		{"negative group", SecurityFields{SupplementalGroups: []int64{5, -5}}, "sc.supplemental_groups"},
		{"too many groups", SecurityFields{SupplementalGroups: make([]int64, maxGroups+1)}, "sc.supplemental_groups"},
		{"unknown policy", SecurityFields{SupplementalGroupsPolicy: 9}, "sc.supplemental_groups_policy"},
		{"unknown seccomp type", SecurityFields{Seccomp: &runtimeapi.SecurityProfile{ProfileType: 7}}, "sc.seccomp.profile_type"},
		{"unknown apparmor type", SecurityFields{Apparmor: &runtimeapi.SecurityProfile{ProfileType: -1}}, "sc.apparmor.profile_type"},
		{"selinux NUL", SecurityFields{SELinux: &runtimeapi.SELinuxOption{Type: "a\x00"}}, "sc.selinux_options.type"},
	}
	for _, tt := range tests {
		wantField(t, tt.name, SecurityContext("sc", tt.s), tt.want)
	}
}

func TestArgv(t *testing.T) {
	tests := []struct {
		name string
		argv []string
		want string
	}{
		{"usual", []string{"/bin/sh", "-c", "echo hi"}, ""},
		{"longest argument", []string{strings.Repeat("a", MaxArgLen)}, ""},
		{"argument too long", []string{"sh", strings.Repeat("a", MaxArgLen+1)}, "a[1]"},
		{"NUL", []string{"a\x00b"}, "a[0]"},
		{"too much in all", func() []string {
			var s []string
			for range MaxArgsTotal/MaxArgLen + 1 {
				s = append(s, strings.Repeat("a", MaxArgLen))
			}
			return s
		}(), "a"},
	}
	for _, tt := range tests {
		_, err := Argv("a", tt.argv)
		wantField(t, tt.name, err, tt.want)
	}
	wantField(t, "empty command", Command("cmd", nil), "cmd")
	wantField(t, "command", Command("cmd", []string{"ls"}), "")
	wantField(t, "env key with =", EnvKey("k", "A=B"), "k")
	wantField(t, "empty env key", EnvKey("k", ""), "k")
	wantField(t, "env key", EnvKey("k", "PATH"), "")
}

func TestMountOptions(t *testing.T) {
	tests := []struct {
		name string
		opts []string
		want string
	}{
		{"none", nil, ""},
		{"the kubelet's three", []string{"nosuid", "nodev", "noexec"}, ""},
		{"one", []string{"noexec"}, ""},
		{"undoes a restriction", []string{"noexec", "exec"}, "f[1]"},
		{"has a field of its own", []string{"ro"}, "f[0]"},
		{"propagation", []string{"rshared"}, "f[0]"},
		{"atime", []string{"noatime"}, "f[0]"},
		{"upper case", []string{"NOEXEC"}, "f[0]"},
		{"with a value", []string{"noexec=1"}, "f[0]"},
		{"empty", []string{""}, "f[0]"},
		{"comma-joined", []string{"noexec,nosuid"}, "f[0]"},
		{"twice", []string{"nodev", "noexec", "nodev"}, "f[2]"},
	}
	for _, tt := range tests {
		wantField(t, tt.name, MountOptions("f", tt.opts), tt.want)
	}
	if err := MountOptions("f", []string{"noexec", "exec"}); err == nil || !strings.Contains(err.Error(), `"exec" is not supported`) {
		t.Errorf("exec: %v, want an error naming the option", err)
	}
	err := MountOptions("f", []string{strings.Repeat("x", 1<<20)})
	if err == nil || len(err.Error()) > 256 {
		t.Errorf("a 1 MiB option: error of %d bytes, want one short error", len(fmt.Sprint(err)))
	}
}
