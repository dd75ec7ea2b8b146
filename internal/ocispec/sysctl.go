package ocispec

import (
	"fmt"
	"maps"
	"strings"

	"github.com/containerd/errdefs"
)

// sysctls copies the pod's sysctls into linux.sysctl. A sysctl of a
// namespace the pod shares with the host would change the host, so net.*
// is rejected with the host network and IPC sysctls with host IPC.
func (b *builder) sysctls() error {
	in := b.in.Sandbox.GetLinux().GetSysctls()
	if len(in) == 0 {
		return nil
	}
	for k := range in {
		if err := checkSysctl(k, b.in.Namespaces); err != nil {
			return err
		}
	}
	b.spec.Linux.Sysctl = maps.Clone(in)
	return nil
}

func checkSysctl(name string, ns Namespaces) error {
	norm := strings.ReplaceAll(name, "/", ".")
	if ns.HostNetwork && strings.HasPrefix(norm, "net.") {
		return fmt.Errorf("sysctl %q cannot be set in a pod using the host network: %w", name, errdefs.ErrInvalidArgument)
	}
	if ns.HostIPC && isIPCSysctl(norm) {
		return fmt.Errorf("sysctl %q cannot be set in a pod using the host IPC namespace: %w", name, errdefs.ErrInvalidArgument)
	}
	return nil
}

// isIPCSysctl reports sysctls that belong to the IPC namespace.
func isIPCSysctl(name string) bool {
	switch name {
	case "kernel.sem", "kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced",
		"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni":
		return true
	}
	return strings.HasPrefix(name, "fs.mqueue.")
}
