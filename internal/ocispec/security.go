package ocispec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// security fills no_new_privs, masked and read-only paths, and checks the
// AppArmor request (crib runs no AppArmor, so only "none" is acceptable).
//
// The masked and read-only paths are the CRI's lists, none when it sends
// none, as containerd takes them: the kubelet sends its default lists for
// procMount Default and empty ones for Unmasked, and on the wire an empty
// list and an absent one are the same, so filling in defaults here would
// mask an Unmasked container. A privileged container gets neither.
func (b *builder) security() error {
	b.spec.Process.NoNewPrivileges = b.sc.GetNoNewPrivs()
	if !b.privileged {
		b.spec.Linux.MaskedPaths = slices.Clone(b.sc.GetMaskedPaths())
		b.spec.Linux.ReadonlyPaths = slices.Clone(b.sc.GetReadonlyPaths())
	}
	return checkAppArmor(b.sc)
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
