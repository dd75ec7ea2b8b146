package podcgroup

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/cgroupfs"
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
		res := systemd.Resources{CPUWeight: cgroupfs.SharesToWeight(shares[qos])}
		if err := m.ensureSlice(m.names.qosName(qos), "crib "+tier(qos)+" pods", res); err != nil {
			return fmt.Errorf("set up qos cgroups: %w", err)
		}
	}
	return nil
}

// dropStaleSlice is dropStale under systemd: the stale slice is stopped
// only when its directories hold no process, since stopping kills them.
func (m *Manager) dropStaleSlice(h cgroupfs.Hierarchies, name, rel, uid string) {
	var dirs []string
	for _, root := range h.Roots {
		if d := filepath.Join(root, rel); cgroupfs.Exists(d) {
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
