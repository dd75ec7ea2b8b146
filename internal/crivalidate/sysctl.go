package crivalidate

import (
	"fmt"
	"strings"
)

// HostNamespaces says which of a pod's namespaces are the host's; it
// decides which sysctls the pod may set. crib gives a pod on the host
// network the host's UTS namespace too.
type HostNamespaces struct {
	Network, IPC bool
	// UserNS is true when the pod has a user namespace of its own.
	UserNS bool
}

// maxSysctlValue is what one write to /proc/sys takes: a page.
const maxSysctlValue = 4096

// Sysctls checks a pod's sysctls as runc and the kubelet allow them: only
// sysctls of a namespace the pod has to itself. net.* needs the pod's own
// network namespace, the IPC ones (kernel.shm*, kernel.msg*, kernel.sem,
// fs.mqueue.*) its own IPC namespace, kernel.domainname its own UTS
// namespace, user.* a user namespace; kernel.hostname is the hostname
// field's, and every other sysctl would change the host.
func Sysctls(field string, m map[string]string, host HostNamespaces) error {
	if len(m) > MaxStrings {
		return Invalid(field, "%d sysctls, more than %d", len(m), MaxStrings)
	}
	for k, v := range m {
		f := fmt.Sprintf("%s[%q]", field, k)
		if err := String(f, v, maxSysctlValue); err != nil {
			return err
		}
		if err := sysctlName(f, k); err != nil {
			return err
		}
		name := NormalizeSysctl(k)
		switch {
		case isIPCSysctl(name):
			if host.IPC {
				return Invalid(f, "an IPC sysctl cannot be set in a pod using the host IPC namespace")
			}
		case strings.HasPrefix(name, "net."):
			if host.Network {
				return Invalid(f, "a net.* sysctl cannot be set in a pod using the host network")
			}
		case name == "kernel.domainname":
			if host.Network {
				return Invalid(f, "kernel.domainname cannot be set in a pod using the host network (and so the host's UTS namespace)")
			}
		case name == "kernel.hostname":
			return Invalid(f, "the hostname is set by the hostname field, not a sysctl")
		case strings.HasPrefix(name, "user."):
			if !host.UserNS {
				return Invalid(f, "a user.* sysctl needs a user namespace")
			}
		default:
			return Invalid(f, "not a namespaced sysctl: it would change the host")
		}
	}
	return nil
}

// sysctlName refuses names that are not a path below /proc/sys: empty
// components, or ones that the '/' form turns into "." or "..".
func sysctlName(field, name string) error {
	if name == "" {
		return Invalid(field, "empty sysctl name")
	}
	if len(name) > MaxPathLen {
		return Invalid(field, "%d bytes, more than %d", len(name), MaxPathLen)
	}
	for _, c := range strings.Split(NormalizeSysctl(name), ".") {
		elem := strings.ReplaceAll(c, "/", ".")
		if c == "" || elem == "." || elem == ".." || strings.ContainsAny(c, "\x00 \t\n") {
			return Invalid(field, "%q is not a sysctl name", name)
		}
	}
	return nil
}

// NormalizeSysctl writes a sysctl name with dots between its components,
// as sysctl(8) does: a name whose first separator is '/' is in the slash
// form, where a '.' belongs to a component (an interface "eth0.100"), so
// '/' and '.' swap.
func NormalizeSysctl(name string) string {
	i := strings.IndexAny(name, "./")
	if i < 0 || name[i] == '.' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, name)
}

// isIPCSysctl reports the sysctls of the IPC namespace.
func isIPCSysctl(name string) bool {
	switch name {
	case "kernel.sem", "kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced",
		"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni":
		return true
	}
	return strings.HasPrefix(name, "fs.mqueue.")
}
