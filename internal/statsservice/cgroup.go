package statsservice

import (
	"context"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/kernelstats"
)

// Cgroup is one reading of a container's or pod's cgroup.
type Cgroup struct {
	kernelstats.Sample
	// NanoCores is the CPU rate since the owner's previous reading, in
	// billionths of a core; it means something only when HasRate. A
	// first reading, or one without CPU figures, has no rate.
	NanoCores uint64
	HasRate   bool
}

// readCgroup reads the cgroup at cgroupsPath for the owner key (a
// container's or pod's id) and records its CPU time for the next rate. A
// cgroup that is not there gives nil and no error.
func (s *Service) readCgroup(ctx context.Context, key, cgroupsPath string) (*Cgroup, error) {
	smp, err := s.cgroups.Read(ctx, cgroupsPath)
	if errdefs.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cg := &Cgroup{Sample: smp}
	if smp.CPU != nil {
		cg.NanoCores, cg.HasRate = s.cpuRate(key, kernelstats.CPUPoint{Time: smp.Time, UsageNanos: smp.CPU.UsageNanos})
	}
	return cg, nil
}
