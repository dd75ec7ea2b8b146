package ocispec

import (
	"runtime"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Errno values returned by the default profile.
const (
	errnoEPERM  = 1
	errnoENOSYS = 38
)

// seccompGate is a group of syscalls the default profile refuses with EPERM
// unless the container holds one of caps (never, when caps is empty).
type seccompGate struct {
	caps  []string
	names []string
}

// seccompGates is the deny-list of the RuntimeDefault profile. It keeps the
// spirit of Docker's default profile (kernel keyring, module loading, clock
// setting, mounting, namespace creation, obsolete and debugging interfaces
// are closed) while everything else is allowed.
var seccompGates = []seccompGate{
	{nil, []string{"add_key", "keyctl", "request_key", "create_module", "get_kernel_syms",
		"query_module", "nfsservctl", "uselib", "ustat", "sysfs", "_sysctl", "vm86", "vm86old"}},
	{[]string{"CAP_SYS_ADMIN"}, []string{"mount", "umount", "umount2", "unshare", "setns",
		"pivot_root", "swapon", "swapoff", "quotactl", "quotactl_fd", "name_to_handle_at",
		"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
		"fanotify_init", "lookup_dcookie"}},
	{[]string{"CAP_SYS_ADMIN", "CAP_BPF"}, []string{"bpf"}},
	{[]string{"CAP_SYS_ADMIN", "CAP_PERFMON"}, []string{"perf_event_open"}},
	{[]string{"CAP_SYS_BOOT"}, []string{"reboot", "kexec_load", "kexec_file_load"}},
	{[]string{"CAP_SYS_MODULE"}, []string{"init_module", "finit_module", "delete_module"}},
	{[]string{"CAP_SYS_PTRACE"}, []string{"kcmp", "userfaultfd"}},
	{[]string{"CAP_SYS_PACCT"}, []string{"acct"}},
	{[]string{"CAP_SYS_RAWIO"}, []string{"iopl", "ioperm"}},
	{[]string{"CAP_SYS_TIME"}, []string{"settimeofday", "stime", "clock_settime", "clock_settime64"}},
	{[]string{"CAP_SYS_NICE"}, []string{"get_mempolicy", "set_mempolicy", "mbind", "move_pages"}},
	{[]string{"CAP_SYSLOG"}, []string{"syslog"}},
	{[]string{"CAP_DAC_READ_SEARCH"}, []string{"open_by_handle_at"}},
}

// cloneNamespaceFlags are the clone(2) flags that create namespaces;
// without CAP_SYS_ADMIN each is refused.
var cloneNamespaceFlags = []uint64{
	0x00020000, // CLONE_NEWNS
	0x02000000, // CLONE_NEWCGROUP
	0x04000000, // CLONE_NEWUTS
	0x08000000, // CLONE_NEWIPC
	0x10000000, // CLONE_NEWUSER
	0x20000000, // CLONE_NEWPID
	0x40000000, // CLONE_NEWNET
}

// DefaultSeccomp is crib's RuntimeDefault profile for a process with caps:
// default allow, EPERM for the gated syscalls the capabilities do not open,
// and, without CAP_SYS_ADMIN, EPERM for clone with namespace flags and
// ENOSYS for clone3 (whose flags live in memory a filter cannot read; libc
// then falls back to clone).
func DefaultSeccomp(caps *specs.LinuxCapabilities) *specs.LinuxSeccomp {
	var denied []string
	for _, g := range seccompGates {
		if !slices.ContainsFunc(g.caps, func(c string) bool { return hasCap(caps, c) }) {
			denied = append(denied, g.names...)
		}
	}
	slices.Sort(denied)
	prof := &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Architectures: nativeArches(),
		Syscalls: []specs.LinuxSyscall{
			{Names: denied, Action: specs.ActErrno, ErrnoRet: ptr(uint(errnoEPERM))},
		},
	}
	if hasCap(caps, "CAP_SYS_ADMIN") {
		return prof
	}
	flagsArg := uint(0)
	if runtime.GOARCH == "s390x" {
		flagsArg = 1 // s390 swaps clone's first two arguments
	}
	for _, f := range cloneNamespaceFlags {
		prof.Syscalls = append(prof.Syscalls, specs.LinuxSyscall{
			Names:    []string{"clone"},
			Action:   specs.ActErrno,
			ErrnoRet: ptr(uint(errnoEPERM)),
			Args:     []specs.LinuxSeccompArg{{Index: flagsArg, Value: f, ValueTwo: f, Op: specs.OpMaskedEqual}},
		})
	}
	prof.Syscalls = append(prof.Syscalls, specs.LinuxSyscall{
		Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: ptr(uint(errnoENOSYS)),
	})
	return prof
}

// nativeArches lists the seccomp architectures of this machine, the native
// one first, so compat syscall entry points are filtered too.
func nativeArches() []specs.Arch {
	switch runtime.GOARCH {
	case "amd64":
		return []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32}
	case "386":
		return []specs.Arch{specs.ArchX86}
	case "arm64":
		return []specs.Arch{specs.ArchAARCH64, specs.ArchARM}
	case "arm":
		return []specs.Arch{specs.ArchARM}
	case "ppc64le":
		return []specs.Arch{specs.ArchPPC64LE}
	case "s390x":
		return []specs.Arch{specs.ArchS390X, specs.ArchS390}
	case "riscv64":
		return []specs.Arch{specs.ArchRISCV64}
	default:
		return nil
	}
}
