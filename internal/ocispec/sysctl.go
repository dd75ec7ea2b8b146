package ocispec

import (
	"maps"

	"github.com/crib-dev/crib/internal/crivalidate"
)

// sysctls copies the pod's sysctls into linux.sysctl, checked again as
// RunPodSandbox checked them (crivalidate.Sysctls): a sysctl of a namespace
// the pod shares with the host would change the host.
func (b *builder) sysctls() error {
	in := b.in.Sandbox.GetLinux().GetSysctls()
	if len(in) == 0 {
		return nil
	}
	ns := b.in.Namespaces
	host := crivalidate.HostNamespaces{Network: ns.HostNetwork, IPC: ns.HostIPC, UserNS: ns.User != nil}
	if err := crivalidate.Sysctls("linux.sysctls", in, host); err != nil {
		return err
	}
	b.spec.Linux.Sysctl = maps.Clone(in)
	return nil
}
