package ocispec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// defaultMaskedPaths are hidden from unprivileged containers unless the CRI
// config lists its own.
var defaultMaskedPaths = []string{
	"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
	"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
	"/sys/firmware", "/sys/devices/virtual/powercap",
}

// defaultReadonlyPaths are read-only in unprivileged containers unless the
// CRI config lists its own.
var defaultReadonlyPaths = []string{
	"/proc/asound", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
}

// security fills no_new_privs, masked and read-only paths, and checks the
// AppArmor request (crib runs no AppArmor, so only "none" is acceptable).
func (b *builder) security() error {
	b.spec.Process.NoNewPrivileges = b.sc.GetNoNewPrivs()
	if !b.privileged {
		b.spec.Linux.MaskedPaths = pathsOr(b.sc.GetMaskedPaths(), defaultMaskedPaths)
		b.spec.Linux.ReadonlyPaths = pathsOr(b.sc.GetReadonlyPaths(), defaultReadonlyPaths)
	}
	return checkAppArmor(b.sc)
}

// pathsOr returns a copy of cri when it is set (even empty), else of def.
func pathsOr(cri, def []string) []string {
	if cri != nil {
		return slices.Clone(cri)
	}
	return slices.Clone(def)
}

// checkAppArmor accepts RuntimeDefault and Unconfined (both mean no profile
// on a host without AppArmor) and rejects a named profile, which could not
// be enforced.
func checkAppArmor(sc *runtimeapi.LinuxContainerSecurityContext) error {
	if p := sc.GetApparmor(); p != nil {
		if p.GetProfileType() == runtimeapi.SecurityProfile_Localhost {
			return fmt.Errorf("apparmor profile %q: apparmor is not enabled on this node: %w", p.GetLocalhostRef(), errdefs.ErrInvalidArgument)
		}
		return nil
	}
	//lint:ignore SA1019 older kubelets still send the deprecated field
	if name := sc.GetApparmorProfile(); strings.HasPrefix(name, "localhost/") {
		return fmt.Errorf("apparmor profile %q: apparmor is not enabled on this node: %w", name, errdefs.ErrInvalidArgument)
	}
	return nil
}
