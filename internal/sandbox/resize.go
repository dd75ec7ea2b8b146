package sandbox

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/cgroupfs"
	cv "github.com/crib-dev/crib/internal/crivalidate"
	"github.com/crib-dev/crib/internal/failpoint"
)

// cgroupRoot is where the cgroup file system is mounted.
const cgroupRoot = "/sys/fs/cgroup"

// UpdateResources is UpdatePodSandboxResources: the pod was resized to
// resources (the sum of its containers') plus overhead. The kubelet
// resizes the pod cgroup it made itself before it calls this, so crib only
// records the new figures then; a pod cgroup crib made (no cgroup_parent
// was given) crib resizes, to the sum: CPU shares, the CFS quota and the
// memory limit, a limit not given being lifted (cpusets, hugepages and
// unified keys are recorded, not applied: the containers' own cgroups carry
// them). Asking twice for the same figures is the same as asking once. A
// resize that fails, however much of the new limits is in force, puts back
// those crib set last (none: a new cgroup's defaults); a restart in
// between keeps the new limits and the old record, which the same figures
// asked again mend.
func (m *Manager) UpdateResources(ctx context.Context, id string, overhead, resources *runtimeapi.LinuxContainerResources) error {
	if id == "" {
		return fmt.Errorf("pod_sandbox_id is empty: %w", errdefs.ErrInvalidArgument)
	}
	if err := cv.Resources("overhead", overhead); err != nil {
		return err
	}
	if err := cv.Resources("resources", resources); err != nil {
		return err
	}
	s, unlock, err := m.locked(id)
	if err != nil {
		return err
	}
	if s == nil {
		return fmt.Errorf("sandbox %s: %w", id, errdefs.ErrNotFound)
	}
	defer unlock()
	if s.State != Ready {
		return fmt.Errorf("resize sandbox %s: it is %s: %w", s.ID, s.State, errdefs.ErrFailedPrecondition)
	}
	if m.cfg.Plugins != nil {
		if err := m.cfg.Plugins.UpdatePodSandbox(ctx, *s, overhead, resources); err != nil {
			return fmt.Errorf("resize sandbox %s: %w", s.ID, err)
		}
	}
	prev := s.Limits
	if s.OwnCgroup {
		l := podLimits(overhead, resources)
		if err := m.applyLimits(ctx, s.CgroupParent, l); err != nil {
			// Part of l may be in force: cgroup v1 refuses a memory limit
			// below what the pod holds (EBUSY) after the CPU's are set.
			m.restoreLimits(context.WithoutCancel(ctx), s.ID, s.CgroupParent, prev)
			return fmt.Errorf("resize sandbox %s: %w", s.ID, err)
		}
		s.Limits = &l
	}
	err = failpoint.Check("UpdatePodSandboxResources/cgroup")
	if err == nil {
		cfg := proto.Clone(s.Config).(*runtimeapi.PodSandboxConfig)
		if cfg.Linux == nil {
			cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{}
		}
		cfg.Linux.Overhead, cfg.Linux.Resources = overhead, resources
		s.Config = cfg
		err = m.save(s)
	}
	if err != nil {
		if s.OwnCgroup {
			m.restoreLimits(context.WithoutCancel(ctx), s.ID, s.CgroupParent, prev)
		}
		return fmt.Errorf("resize sandbox %s: %w", s.ID, err)
	}
	m.mu.Lock()
	if cur, ok := m.byID[s.ID]; ok {
		*cur = *s
	}
	m.mu.Unlock()
	m.log.Info("sandbox resized", "sandbox", s.ID, "own_cgroup", s.OwnCgroup)
	if m.cfg.Plugins != nil {
		m.cfg.Plugins.PostUpdatePodSandbox(ctx, *s)
	}
	return failpoint.Check("UpdatePodSandboxResources/record")
}

// restoreLimits puts back on a pod cgroup the limits of its record after a
// resize that failed: those crib set last, or, when it set none, those of
// a new cgroup (no limit, the default CPU weight: cpu.weight 100 on v2,
// not the 39 that 1024 shares convert to).
func (m *Manager) restoreLimits(ctx context.Context, id, cgroup string, prev *cgroupfs.Limits) {
	l := cgroupfs.Defaults()
	if prev != nil {
		l = *prev
	}
	if err := m.applyLimits(ctx, cgroup, l); err != nil {
		m.log.Error("put back the limits of a failed resize", "sandbox", id, "err", err)
	}
}

// podLimits sums a pod's resources and overhead into its cgroup's limits
// as the kubelet sizes a pod cgroup: the shares of both; a quota and a
// memory limit only when the pod's own is set (overhead alone limits
// nothing), the overhead's quota scaled to the pod's period.
func podLimits(overhead, res *runtimeapi.LinuxContainerResources) cgroupfs.Limits {
	l := cgroupfs.Unlimited(uint64(max(res.GetCpuShares()+overhead.GetCpuShares(), cgroupfs.MinShares)))
	if p := res.GetCpuPeriod(); p > 0 {
		l.CPUPeriod = uint64(p)
	}
	if q := res.GetCpuQuota(); q > 0 {
		extra := overhead.GetCpuQuota()
		if p := overhead.GetCpuPeriod(); extra > 0 && p > 0 && uint64(p) != l.CPUPeriod {
			extra = extra * int64(l.CPUPeriod) / p
		}
		l.CPUQuota = q + max(extra, 0)
	}
	if mem := res.GetMemoryLimitInBytes(); mem > 0 {
		l.Memory = mem + overhead.GetMemoryLimitInBytes()
	}
	return l
}

// applyLimits writes l to the pod cgroup crib made: a systemd slice's
// properties, or the cgroup's files, making its directories first where
// no container has yet.
func (m *Manager) applyLimits(ctx context.Context, cgroup string, l cgroupfs.Limits) error {
	if strings.HasSuffix(cgroup, ".slice") {
		if m.cfg.Systemd == nil {
			return fmt.Errorf("resize pod slice %s: systemd is not running", cgroup)
		}
		return m.cfg.Systemd.SetResources(ctx, cgroup, cgroupfs.SliceResources(l))
	}
	h, err := cgroupfs.Find(cgroupRoot)
	if err != nil {
		return err
	}
	rel := filepath.Clean("/" + cgroup)
	var levels []string
	for p := rel; p != "/"; p = filepath.Dir(p) {
		levels = append([]string{p}, levels...)
	}
	for _, root := range h.Roots {
		if err := h.MkdirLevels(root, levels); err != nil {
			return err
		}
	}
	return h.Apply(rel, l)
}
