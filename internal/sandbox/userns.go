package sandbox

import (
	"fmt"
	"math"
	"syscall"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/netns"
)

const usernsField = "config.linux.security_context.namespace_options.userns_options"

// UserNamespace returns the mapping of the user namespace the pod asks for,
// or nil when it runs with the host's users (no userns_options, or mode
// NODE). A pod of its own user namespace gives exactly one range for uids
// and one for gids, each starting at container id 0, not empty, inside the
// 32-bit id space and not mapping host id 0 (that would give the pod the
// host's root). Its IPC and PID namespaces cannot be the host's: the
// kernel would not let its root manage them, nor the pod have its own
// /proc. Its network can (RuntimeFeatures.user_namespaces_host_network):
// the pod then sees the host's, cannot change it, and gets the host's /sys
// read-only (ocispec); a net.* sysctl for it is refused with the others of
// a host namespace (crivalidate.Sysctls).
func UserNamespace(ns *runtimeapi.NamespaceOption) (*netns.UserNS, error) {
	opts := ns.GetUsernsOptions()
	switch opts.GetMode() {
	case runtimeapi.NamespaceMode_POD:
		if opts == nil {
			return nil, nil
		}
	case runtimeapi.NamespaceMode_NODE:
		if len(opts.GetUids()) > 0 || len(opts.GetGids()) > 0 {
			return nil, fmt.Errorf("%s: mode NODE takes no uids or gids: %w", usernsField, errdefs.ErrInvalidArgument)
		}
		return nil, nil
	default:
		return nil, fmt.Errorf("%s.mode %s: a pod's user namespace is POD or NODE: %w", usernsField, opts.GetMode(), errdefs.ErrInvalidArgument)
	}
	for _, host := range []struct {
		field string
		mode  runtimeapi.NamespaceMode
	}{{"ipc", ns.GetIpc()}, {"pid", ns.GetPid()}} {
		if host.mode == runtimeapi.NamespaceMode_NODE {
			return nil, fmt.Errorf("config.linux.security_context.namespace_options.%s is NODE: a pod in its own user namespace cannot use the host's: %w", host.field, errdefs.ErrInvalidArgument)
		}
	}
	uids, err := idRange(usernsField+".uids", opts.GetUids())
	if err != nil {
		return nil, err
	}
	gids, err := idRange(usernsField+".gids", opts.GetGids())
	if err != nil {
		return nil, err
	}
	return &netns.UserNS{UIDs: uids, GIDs: gids}, nil
}

// idRange checks one CRI id mapping of a pod's user namespace.
func idRange(field string, ms []*runtimeapi.IDMapping) ([]syscall.SysProcIDMap, error) {
	if len(ms) != 1 {
		return nil, fmt.Errorf("%s: %d ranges given, exactly one is supported: %w", field, len(ms), errdefs.ErrInvalidArgument)
	}
	m := ms[0]
	// 2^32-1 is (uid_t)-1, which no id may be.
	const idSpace = math.MaxUint32
	switch {
	case m.GetContainerId() != 0:
		return nil, fmt.Errorf("%s[0].container_id is %d: the range must map container id 0: %w", field, m.GetContainerId(), errdefs.ErrInvalidArgument)
	case m.GetLength() == 0:
		return nil, fmt.Errorf("%s[0].length is 0: %w", field, errdefs.ErrInvalidArgument)
	case m.GetHostId() == 0:
		return nil, fmt.Errorf("%s[0].host_id is 0: the range would map the host's root into the pod: %w", field, errdefs.ErrInvalidArgument)
	case uint64(m.GetHostId())+uint64(m.GetLength()) > idSpace:
		return nil, fmt.Errorf("%s[0]: host_id %d + length %d overflows the id space: %w", field, m.GetHostId(), m.GetLength(), errdefs.ErrInvalidArgument)
	}
	return []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(m.GetHostId()), Size: int(m.GetLength())}}, nil
}
