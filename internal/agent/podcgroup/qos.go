package podcgroup

import (
	"fmt"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/cgroupfs"
)

// UpdateQOS sets the CPU shares of the QoS cgroups from the pods on the
// node, as the kubelet's QoS container manager does on every pod change:
// Burstable gets the shares of its pods' summed CPU requests (so that,
// under contention, it competes with Guaranteed pods by what it asked
// for), BestEffort the minimum. Call it after Setup, with every pod that
// has a cgroup, whenever pods are added, removed or resized.
func (m *Manager) UpdateQOS(pods []*corev1.Pod) error {
	if m.err != nil {
		return m.err
	}
	var milli int64
	for _, p := range pods {
		if podconfig.QOSClass(p) == corev1.PodQOSBurstable {
			milli += podconfig.PodResources(p).WithOverhead(p.Spec.Overhead).CPURequest
		}
	}
	return m.setQOSShares(map[corev1.PodQOSClass]uint64{
		corev1.PodQOSBurstable:  uint64(podconfig.MilliCPUToShares(milli)),
		corev1.PodQOSBestEffort: cgroupfs.MinShares,
	})
}

// setQOSShares creates the root and both QoS cgroups and sets the shares
// of those in shares.
func (m *Manager) setQOSShares(shares map[corev1.PodQOSClass]uint64) error {
	if m.units != nil {
		return m.setQOSSlices(shares)
	}
	h, err := cgroupfs.Find(m.fs)
	if err != nil {
		return err
	}
	for _, qos := range []corev1.PodQOSClass{corev1.PodQOSBurstable, corev1.PodQOSBestEffort} {
		rel, err := m.create(h, m.names.qosName(qos))
		if err != nil {
			return fmt.Errorf("set up qos cgroups: %w", err)
		}
		s, ok := shares[qos]
		if !ok {
			continue
		}
		if h.Unified {
			err = cgroupfs.WriteFile(filepath.Join(h.Roots[0], rel, "cpu.weight"), strconv.FormatUint(cgroupfs.SharesToWeight(s), 10))
		} else if cpu := h.With("cpu.shares"); cpu != "" {
			err = cgroupfs.WriteFile(filepath.Join(cpu, rel, "cpu.shares"), strconv.FormatUint(s, 10))
		}
		if err != nil {
			return fmt.Errorf("set up qos cgroups: %w", err)
		}
	}
	return nil
}
