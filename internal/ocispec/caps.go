package ocispec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// capNames lists the Linux capabilities by number.
var capNames = [...]string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER",
	"CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP",
	"CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST",
	"CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER",
	"CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
	"CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD",
	"CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP",
	"CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}

// defaultCapabilities is the set an unprivileged container starts from, the
// same fourteen Docker and containerd grant.
var defaultCapabilities = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
	"CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
	"CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// DefaultCapabilities returns a copy of the default capability set.
func DefaultCapabilities() []string { return slices.Clone(defaultCapabilities) }

// capabilities fills process.capabilities.
func (b *builder) capabilities() error {
	caps, err := Capabilities(b.sc.GetCapabilities(), b.privileged, b.in.HostCaps)
	if err != nil {
		return err
	}
	b.spec.Process.Capabilities = caps
	return nil
}

// HostCaps says which capabilities crib can hand out: those numbered up to
// Last (the kernel's cap_last_cap; zero means every capability crib knows)
// whose bit is set in Mask (the daemon's own effective set; zero means no
// restriction). A container can never hold a capability its runtime lacks.
type HostCaps struct {
	Last int
	Mask uint64
}

// has reports whether capability n can be granted.
func (h HostCaps) has(n int) bool {
	last := h.Last
	if last <= 0 || last >= len(capNames) {
		last = len(capNames) - 1
	}
	return n <= last && (h.Mask == 0 || h.Mask&(1<<uint(n)) != 0)
}

// Capabilities computes the capability sets. Privileged containers get every
// capability the host can grant and CRI add/drop lists are ignored. Otherwise the
// default set is adjusted: "ALL" in add grants everything, "ALL" in drop
// clears everything (after an "ALL" add), then single adds, then single
// drops, so a drop beats an add of the same capability. Names are matched
// case-insensitively, with or without the CAP_ prefix; unknown names are an
// invalid argument; naming one the host cannot grant is a failed
// precondition, while "ALL" and the defaults quietly shrink to what the host
// can grant. Ambient capabilities are also raised in every other set. Every
// set is ordered by capability number.
func Capabilities(c *runtimeapi.Capability, privileged bool, host HostCaps) (*specs.LinuxCapabilities, error) {
	have := map[int]bool{}
	if privileged {
		for n := range capNames {
			have[n] = true
		}
		return capSets(have, nil, host), nil
	}
	for _, name := range defaultCapabilities {
		n, _ := capNumber(name)
		have[n] = true
	}
	add, addAll, err := capList("add_capabilities", c.GetAddCapabilities())
	if err != nil {
		return nil, err
	}
	drop, dropAll, err := capList("drop_capabilities", c.GetDropCapabilities())
	if err != nil {
		return nil, err
	}
	ambient, ambientAll, err := capList("add_ambient_capabilities", c.GetAddAmbientCapabilities())
	if err != nil {
		return nil, err
	}
	if ambientAll {
		return nil, fmt.Errorf("add_ambient_capabilities: ALL is not allowed: %w", errdefs.ErrInvalidArgument)
	}
	if addAll {
		for n := range capNames {
			have[n] = true
		}
	}
	if dropAll {
		clear(have)
	}
	for _, n := range add {
		if !host.has(n) {
			return nil, fmt.Errorf("add_capabilities: %s is not available to the runtime on this node: %w", capNames[n], errdefs.ErrFailedPrecondition)
		}
		have[n] = true
	}
	for _, n := range drop {
		delete(have, n)
	}
	amb := map[int]bool{}
	for _, n := range ambient {
		if !host.has(n) {
			return nil, fmt.Errorf("add_ambient_capabilities: %s is not available to the runtime on this node: %w", capNames[n], errdefs.ErrFailedPrecondition)
		}
		amb[n] = true
		have[n] = true
	}
	return capSets(have, amb, host), nil
}

// capSets turns capability number sets into the OCI form, leaving out what
// the host cannot grant.
func capSets(have, ambient map[int]bool, host HostCaps) *specs.LinuxCapabilities {
	names := func(set map[int]bool) []string {
		out := []string{}
		for n := range capNames {
			if set[n] && host.has(n) {
				out = append(out, capNames[n])
			}
		}
		return out
	}
	all := names(have)
	caps := &specs.LinuxCapabilities{
		Bounding:  all,
		Effective: slices.Clone(all),
		Permitted: slices.Clone(all),
	}
	if amb := names(ambient); len(amb) > 0 {
		caps.Ambient = amb
		caps.Inheritable = slices.Clone(amb)
	}
	return caps
}

// capList normalises a CRI capability list; all reports an "ALL" entry.
func capList(field string, in []string) (nums []int, all bool, err error) {
	for _, name := range in {
		if strings.EqualFold(name, "ALL") {
			all = true
			continue
		}
		n, ok := capNumber(name)
		if !ok {
			return nil, false, fmt.Errorf("%s: unknown capability %q: %w", field, name, errdefs.ErrInvalidArgument)
		}
		nums = append(nums, n)
	}
	return nums, all, nil
}

// capNumber maps "chown", "CAP_CHOWN", "cap_chown" to 0.
func capNumber(name string) (int, bool) {
	name = strings.ToUpper(strings.TrimSpace(name))
	if !strings.HasPrefix(name, "CAP_") {
		name = "CAP_" + name
	}
	i := slices.Index(capNames[:], name)
	return i, i >= 0
}

// hasCap reports whether name is in the process's bounding set.
func hasCap(caps *specs.LinuxCapabilities, name string) bool {
	return caps != nil && slices.Contains(caps.Bounding, name)
}
