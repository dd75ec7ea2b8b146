package usage

import (
	"context"
	"errors"
	"fmt"

	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/sandbox"
)

// Pod is a pod's usage.
type Pod struct {
	// Cgroup is nil when the pod has no cgroup to read: it has no cgroup
	// parent, no container has made it yet, or it could not be read.
	Cgroup *Cgroup
	// Containers are the usage of the containers given to Pod, in their
	// order.
	Containers []Container
}

// Pod reads sb's cgroup and the usage of ctrs, its containers.
func (s *Service) Pod(ctx context.Context, sb sandbox.Sandbox, ctrs []container.Container) (Pod, error) {
	var u Pod
	var errs []error
	if sb.CgroupParent != "" {
		var err error
		if u.Cgroup, err = s.readCgroup(ctx, sb.ID, sb.CgroupParent); err != nil {
			errs = append(errs, err)
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
