package podcgroup

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/systemd"
)

// sliceUnits is what the systemd driver needs of systemd: *systemd.Client,
// or a fake in tests.
type sliceUnits interface {
	// EnsureSlice starts the transient slice, or sets res on it when it
	// runs already.
	EnsureSlice(ctx context.Context, name, description string, res systemd.Resources) error
	// Stop stops the unit, killing what is left in it; a unit systemd
	// does not know is no error.
	Stop(ctx context.Context, name string) error
}

var _ sliceUnits = (*systemd.Client)(nil)

// unitTimeout bounds one call to systemd. The Manager's methods take no
// context, and a stop is quick: the processes are killed before it.
const unitTimeout = 30 * time.Second

// systemd's CPUQuota is a percentage of one CPU, so CPUQuotaPerSecUSec is
// kept in steps of 1% of a second.
const quotaStep = 10000 // microseconds per second

// sliceResources are the unit properties of a cgroup with limits l, as
// the kubelet's systemd driver (runc's libcontainer) sets them: cpu
// shares as CPUWeight, the CFS quota per second of wall time rounded up
// to systemd's precision, and the memory limit; a limit not set is lifted
// with Unlimited, so that a resize that drops it takes effect.
func sliceResources(l Limits) systemd.Resources {
	r := systemd.Resources{
		CPUWeight:          sharesToWeight(l.CPUShares),
		CPUQuotaPerSecUSec: systemd.Unlimited,
		MemoryMax:          systemd.Unlimited,
	}
	if l.CPUQuota > 0 {
		r.CPUQuotaPerSecUSec = quotaPerSecond(uint64(l.CPUQuota), l.CPUPeriod)
	}
	if l.Memory > 0 {
		r.MemoryMax = uint64(l.Memory)
	}
	return r
}

// quotaPerSecond converts a CFS quota per period (both in microseconds;
// period 0 is the default) to microseconds per second, rounded up to a
// whole percent as runc does, so a quota is never tightened. A quota too
// large to convert is in effect none.
func quotaPerSecond(quota, period uint64) uint64 {
	if period == 0 {
		period = cfsPeriod
	}
	if quota > math.MaxUint64/1_000_000 {
		return systemd.Unlimited
	}
	usec := quota * 1_000_000 / period
	if usec%quotaStep != 0 {
		usec = (usec/quotaStep + 1) * quotaStep
	}
	return usec
}

// podDescription is the Description of a pod's slice, for systemctl.
func podDescription(pod *corev1.Pod) string {
	return fmt.Sprintf("crib pod %s/%s (%s)", pod.Namespace, pod.Name, pod.UID)
}

// ensureSlice starts the named slice, or sets res on it.
func (m *Manager) ensureSlice(name, description string, res systemd.Resources) error {
	ctx, cancel := context.WithTimeout(context.Background(), unitTimeout)
	defer cancel()
	return m.units.EnsureSlice(ctx, name, description, res)
}

// stopSlice stops the named slice.
func (m *Manager) stopSlice(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), unitTimeout)
	defer cancel()
	return m.units.Stop(ctx, name)
}

// setQOSSlices is setQOSShares under systemd. The root is made a slice of
// its own too, rather than left to systemd to make implicitly as the QoS
// slices' parent, so that it carries a description and accounting like
// the kubelet's.
func (m *Manager) setQOSSlices(shares map[corev1.PodQOSClass]uint64) error {
	if err := m.ensureSlice(m.names.parent(), "crib pods", systemd.Resources{}); err != nil {
		return fmt.Errorf("set up qos cgroups: %w", err)
	}
	for _, qos := range []corev1.PodQOSClass{corev1.PodQOSBurstable, corev1.PodQOSBestEffort} {
		// Zero shares (a class not in shares) leave the weight as it is.
		res := systemd.Resources{CPUWeight: sharesToWeight(shares[qos])}
		if err := m.ensureSlice(m.names.qosName(qos), "crib "+tier(qos)+" pods", res); err != nil {
			return fmt.Errorf("set up qos cgroups: %w", err)
		}
	}
	return nil
}

// dropStaleSlice is dropStale under systemd: the stale slice is stopped
// only when its directories hold no process, since stopping kills them.
func (m *Manager) dropStaleSlice(h hierarchies, name, rel, uid string) {
	var dirs []string
	for _, root := range h.roots {
		if d := filepath.Join(root, rel); exists(d) {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		return
	}
	if pids, err := treePids(dirs); err != nil || len(pids) > 0 {
		m.log.Debug("stale pod slice left in place", "pod", uid, "slice", name, "pids", len(pids), "err", err)
		return
	}
	if err := m.stopSlice(name); err != nil {
		m.log.Debug("stale pod slice left in place", "pod", uid, "slice", name, "err", err)
		return
	}
	for _, d := range dirs { // what systemd did not know
		if err := m.removeTree(d); err != nil {
			m.log.Debug("stale pod cgroup left in place", "pod", uid, "cgroup", d, "err", err)
		}
	}
}
