//lint:file-ignore SA1019 the deprecated CRI seccomp field must keep working

package ocispec

import (
	"errors"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestSeccompSelection(t *testing.T) {
	dir := t.TempDir()
	ociProfile := writeFile(t, dir, "oci.json", `{"defaultAction":"SCMP_ACT_ALLOW","architectures":["SCMP_ARCH_X86_64"],
		"syscalls":[{"names":["chmod","fchmodat"],"action":"SCMP_ACT_ERRNO","errnoRet":13}]}`)
	dockerProfile := writeFile(t, dir, "docker.json", `{"defaultAction":"SCMP_ACT_ERRNO",
		"archMap":[{"architecture":"`+string(nativeArches()[0])+`","subArchitectures":["SCMP_ARCH_X86"]},
		           {"architecture":"SCMP_ARCH_MIPS","subArchitectures":[]}],
		"syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW","includes":{"caps":["CAP_X"]}}]}`)
	badProfile := writeFile(t, dir, "bad.json", `{"syscalls": 3}`)
	noAction := writeFile(t, dir, "noaction.json", `{}`)
	caps, _ := Capabilities(nil, false, HostCaps{})
	profile := func(typ runtimeapi.SecurityProfile_ProfileType, ref string) *runtimeapi.LinuxContainerSecurityContext {
		return &runtimeapi.LinuxContainerSecurityContext{Seccomp: &runtimeapi.SecurityProfile{ProfileType: typ, LocalhostRef: ref}}
	}
	tests := []struct {
		name    string
		sc      *runtimeapi.LinuxContainerSecurityContext
		want    *specs.LinuxSeccomp
		wantErr bool
	}{
		{name: "nothing set is unconfined", sc: nil, want: nil},
		{name: "unconfined", sc: profile(runtimeapi.SecurityProfile_Unconfined, ""), want: nil},
		{name: "runtime default", sc: profile(runtimeapi.SecurityProfile_RuntimeDefault, ""), want: DefaultSeccomp(caps)},
		{
			name: "localhost oci profile",
			sc:   profile(runtimeapi.SecurityProfile_Localhost, ociProfile),
			want: &specs.LinuxSeccomp{
				DefaultAction: specs.ActAllow, Architectures: []specs.Arch{specs.ArchX86_64},
				Syscalls: []specs.LinuxSyscall{{Names: []string{"chmod", "fchmodat"}, Action: specs.ActErrno, ErrnoRet: ptr(uint(13))}},
			},
		},
		{
			name: "localhost docker profile takes this machine's archMap entry",
			sc:   profile(runtimeapi.SecurityProfile_Localhost, dockerProfile),
			want: &specs.LinuxSeccomp{
				DefaultAction: specs.ActErrno, Architectures: []specs.Arch{nativeArches()[0], specs.ArchX86},
				Syscalls: []specs.LinuxSyscall{{Names: []string{"read"}, Action: specs.ActAllow}},
			},
		},
		{name: "localhost missing", sc: profile(runtimeapi.SecurityProfile_Localhost, filepath.Join(dir, "missing.json")), wantErr: true},
		{name: "localhost relative", sc: profile(runtimeapi.SecurityProfile_Localhost, "oci.json"), wantErr: true},
		{name: "localhost malformed", sc: profile(runtimeapi.SecurityProfile_Localhost, badProfile), wantErr: true},
		{name: "localhost without default action", sc: profile(runtimeapi.SecurityProfile_Localhost, noAction), wantErr: true},
		{name: "deprecated runtime/default", sc: &runtimeapi.LinuxContainerSecurityContext{SeccompProfilePath: "runtime/default"}, want: DefaultSeccomp(caps)},
		{name: "deprecated unconfined", sc: &runtimeapi.LinuxContainerSecurityContext{SeccompProfilePath: "unconfined"}, want: nil},
		{
			name: "deprecated localhost",
			sc:   &runtimeapi.LinuxContainerSecurityContext{SeccompProfilePath: "localhost/" + ociProfile},
			want: &specs.LinuxSeccomp{
				DefaultAction: specs.ActAllow, Architectures: []specs.Arch{specs.ArchX86_64},
				Syscalls: []specs.LinuxSyscall{{Names: []string{"chmod", "fchmodat"}, Action: specs.ActErrno, ErrnoRet: ptr(uint(13))}},
			},
		},
		{name: "deprecated garbage", sc: &runtimeapi.LinuxContainerSecurityContext{SeccompProfilePath: "whatever"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Seccomp(tt.sc, caps)
			if tt.wantErr {
				if !errors.Is(err, errdefs.ErrInvalidArgument) {
					t.Fatalf("err = %v, want invalid argument", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("profile (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDefaultSeccompFollowsCapabilities checks that a capability opens the
// syscalls it governs and that CAP_SYS_ADMIN lifts the clone rules.
func TestDefaultSeccompFollowsCapabilities(t *testing.T) {
	denied := func(p *specs.LinuxSeccomp) []string { return p.Syscalls[0].Names }
	plain, _ := Capabilities(nil, false, HostCaps{})
	p := DefaultSeccomp(plain)
	for _, name := range []string{"mount", "reboot", "init_module", "keyctl", "settimeofday", "bpf", "unshare"} {
		if !slices.Contains(denied(p), name) {
			t.Errorf("default profile allows %s", name)
		}
	}
	for _, name := range []string{"read", "chroot", "chown", "ptrace", "sethostname"} {
		if slices.Contains(denied(p), name) {
			t.Errorf("default profile denies %s", name)
		}
	}
	if !slices.IsSorted(denied(p)) {
		t.Errorf("denied names are not sorted: %v", denied(p))
	}
	if n := len(p.Syscalls); n != 9 {
		t.Errorf("default profile has %d rules, want 9 (deny list, 7 clone flags, clone3)", n)
	}
	if runtime.GOARCH == "amd64" {
		if diff := cmp.Diff([]specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32}, p.Architectures); diff != "" {
			t.Errorf("architectures (-want +got):\n%s", diff)
		}
	}

	admin, _ := Capabilities(&runtimeapi.Capability{AddCapabilities: []string{"SYS_ADMIN", "SYS_TIME"}}, false, HostCaps{})
	p = DefaultSeccomp(admin)
	for _, name := range []string{"mount", "unshare", "bpf", "settimeofday", "clock_settime"} {
		if slices.Contains(denied(p), name) {
			t.Errorf("profile with CAP_SYS_ADMIN and CAP_SYS_TIME denies %s", name)
		}
	}
	if !slices.Contains(denied(p), "reboot") {
		t.Errorf("profile without CAP_SYS_BOOT allows reboot")
	}
	if n := len(p.Syscalls); n != 1 {
		t.Errorf("profile with CAP_SYS_ADMIN has %d rules, want only the deny list", n)
	}
}

func TestPrivilegedHasNoSeccompOrMasks(t *testing.T) {
	f := newFixture(t)
	in := f.input()
	in.Container.Linux.SecurityContext.Privileged = true
	in.DevDir = t.TempDir()
	spec, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Linux.Seccomp != nil || spec.Linux.MaskedPaths != nil || spec.Linux.ReadonlyPaths != nil {
		t.Errorf("privileged spec has seccomp %v, masked %v, readonly %v", spec.Linux.Seccomp != nil, spec.Linux.MaskedPaths, spec.Linux.ReadonlyPaths)
	}
}
