package ocispec

import (
	"fmt"

	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// namespaces fills linux.namespaces and the hostname. The mount namespace is
// always new; the cgroup namespace is new on cgroup v2 only; the others
// follow Input.Namespaces. The hostname is set only when the container gets
// a UTS namespace of its own (joining the pod's, it is already set there).
func (b *builder) namespaces() error {
	// An absent userns_options means the host user namespace; the zero mode
	// of a present one (POD) asks for a private one.
	if u := b.sc.GetNamespaceOptions().GetUsernsOptions(); u != nil && u.GetMode() == runtimeapi.NamespaceMode_POD {
		return fmt.Errorf("user namespaces are not supported: %w", errdefs.ErrNotImplemented)
	}
	ns := b.in.Namespaces
	var out []specs.LinuxNamespace
	add := func(t specs.LinuxNamespaceType, path string, host bool) {
		if !host {
			out = append(out, specs.LinuxNamespace{Type: t, Path: path})
		}
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
