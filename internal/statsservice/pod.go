package statsservice

import (
	"context"
	"errors"
	"fmt"

	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/kernelstats"
	"github.com/crib-dev/crib/internal/netns"
	"github.com/crib-dev/crib/internal/sandbox"
)

// Pod is a pod's usage.
type Pod struct {
	// Cgroup is nil when the pod has no cgroup to read: it has no cgroup
	// parent, no container has made it yet, or it could not be read.
	Cgroup *Cgroup
	// Network is nil when the pod uses the host's network or its
	// namespace could not be read.
	Network *kernelstats.Network
	// Containers are the usage of the containers given to Pod, in their
	// order.
	Containers []Container
}

// Pod reads sb's cgroup, its network and the usage of ctrs, its
// containers.
func (s *Service) Pod(ctx context.Context, sb sandbox.Sandbox, ctrs []container.Container) (Pod, error) {
	var u Pod
	var errs []error
	if sb.CgroupParent != "" {
		var err error
		if u.Cgroup, err = s.readCgroup(ctx, sb.ID, sb.CgroupParent); err != nil {
			errs = append(errs, err)
		}
	}
	if sb.NetNS != "" {
		n, err := readNetwork(sb.NetNS)
		if err != nil {
			errs = append(errs, err)
		} else {
			u.Network = &n
		}
	}
	for _, c := range ctrs {
		cu, err := s.Container(ctx, c)
		if err != nil {
			errs = append(errs, err)
		}
		u.Containers = append(u.Containers, cu)
	}
	if err := errors.Join(errs...); err != nil {
		return u, fmt.Errorf("sandbox %s stats: %w", sb.ID, err)
	}
	return u, nil
}

// readNetwork reads the interfaces of the network namespace pinned at
// path, from a thread that joins it: net/dev shows the reading thread's
// namespace.
func readNetwork(path string) (kernelstats.Network, error) {
	var n kernelstats.Network
	err := netns.Do(path, func() error {
		var err error
		n, err = kernelstats.ReadNetDev("/proc/thread-self")
		return err
	})
	if err != nil {
		return kernelstats.Network{}, fmt.Errorf("pod network: %w", err)
	}
	return n, nil
}
