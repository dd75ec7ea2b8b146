package crivalidate

import (
	"math"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SecurityFields are the fields a pod's and a container's security
// contexts share.
type SecurityFields struct {
	SELinux                  *runtimeapi.SELinuxOption
	RunAsUser, RunAsGroup    *runtimeapi.Int64Value
	SupplementalGroups       []int64
	SupplementalGroupsPolicy runtimeapi.SupplementalGroupsPolicy
	Seccomp, Apparmor        *runtimeapi.SecurityProfile
}

// maxGroups is the kernel's NGROUPS_MAX.
const maxGroups = 65536

// SecurityContext checks the security fields a pod and a container share:
// enums in range, ids the kernel takes, bounded strings.
func SecurityContext(field string, s SecurityFields) error {
	se := s.SELinux
	for name, v := range map[string]string{
		".selinux_options.user": se.GetUser(), ".selinux_options.role": se.GetRole(),
		".selinux_options.type": se.GetType(), ".selinux_options.level": se.GetLevel(),
	} {
		if err := String(field+name, v, MaxNameLen); err != nil {
			return err
		}
	}
	if s.RunAsUser != nil {
		if err := ID(field+".run_as_user", s.RunAsUser.GetValue()); err != nil {
			return err
		}
	}
	if s.RunAsGroup != nil {
		if err := ID(field+".run_as_group", s.RunAsGroup.GetValue()); err != nil {
			return err
		}
	}
	if n := len(s.SupplementalGroups); n > maxGroups {
		return Invalid(field+".supplemental_groups", "%d groups, more than %d", n, maxGroups)
	}
	for _, g := range s.SupplementalGroups {
		if err := ID(field+".supplemental_groups", g); err != nil {
			return err
		}
	}
	if err := Enum(field+".supplemental_groups_policy", s.SupplementalGroupsPolicy, runtimeapi.SupplementalGroupsPolicy_name); err != nil {
		return err
	}
	if err := Profile(field+".seccomp", s.Seccomp); err != nil {
		return err
	}
	return Profile(field+".apparmor", s.Apparmor)
}

// ID checks a user or group id: the kernel's are 32-bit, and -1 (all
// ones) means "no change" to it, never an id.
func ID(field string, id int64) error {
	if id < 0 || id >= math.MaxUint32 {
		return Invalid(field, "%d is not a user or group id", id)
	}
	return nil
}

// Profile checks a seccomp or AppArmor profile: a known type, a bounded
// reference.
func Profile(field string, p *runtimeapi.SecurityProfile) error {
	if err := Enum(field+".profile_type", p.GetProfileType(), runtimeapi.SecurityProfile_ProfileType_name); err != nil {
		return err
	}
	return String(field+".localhost_ref", p.GetLocalhostRef(), MaxPathLen)
}
