package ocispec

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// namespaces fills linux.namespaces and the hostname. The mount namespace is
// always new; the cgroup namespace is new on cgroup v2 only; the others
// follow Input.Namespaces. The hostname is set only when the container gets
// a UTS namespace of its own (joining the pod's, it is already set there).
func (b *builder) namespaces() error {
	ns := b.in.Namespaces
	var out []specs.LinuxNamespace
	add := func(t specs.LinuxNamespaceType, path string, host bool) {
		if !host {
			out = append(out, specs.LinuxNamespace{Type: t, Path: path})
		}
	}
	if u := ns.User; u != nil {
		add(specs.UserNamespace, u.Path, false)
		b.spec.Linux.UIDMappings, b.spec.Linux.GIDMappings = u.UIDs, u.GIDs
	}
	add(specs.PIDNamespace, ns.PIDNS, ns.HostPID)
	add(specs.NetworkNamespace, ns.NetNS, ns.HostNetwork)
	add(specs.IPCNamespace, ns.IPCNS, ns.HostIPC)
	add(specs.UTSNamespace, ns.UTSNS, ns.HostNetwork)
	add(specs.MountNamespace, "", false)
	if b.in.CgroupV2 {
		add(specs.CgroupNamespace, "", false)
	}
	b.spec.Linux.Namespaces = out
	if !ns.HostNetwork && ns.UTSNS == "" {
		b.spec.Hostname = b.in.Sandbox.GetHostname()
	}
	return nil
}
