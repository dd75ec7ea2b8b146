package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/cgroups/v3"

	"github.com/crib-dev/crib/internal/systemd"
)

// podCgroup is the cgroup parent of the pod's containers: the kubelet's
// choice, or one crib makes (and so must remove) under its configured
// parent.
func (m *Manager) podCgroup(kubeletParent, id string) (string, bool) {
	if kubeletParent != "" {
		return kubeletParent, false
	}
	if m.cfg.CgroupDriver == "systemd" {
		parent := strings.TrimSuffix(m.cfg.CgroupParent, ".slice")
		if parent == "" {
			parent = "crib"
		}
		return parent + "-" + id[:12] + ".slice", true
	}
	return filepath.Join(m.cfg.CgroupParent, id), true
}

// makeCgroup makes the pod cgroup crib chose for s, when the driver is
// systemd: a slice systemd knows, so that it can be stopped as a whole.
// Under cgroupfs, runc makes the directories as containers start.
func (m *Manager) makeCgroup(ctx context.Context, s *Sandbox) error {
	if !s.OwnCgroup || m.cfg.CgroupDriver != "systemd" {
		return nil
	}
	if m.cfg.Systemd == nil {
		return fmt.Errorf("make pod slice %s: no systemd client", s.CgroupParent)
	}
	return m.cfg.Systemd.EnsureSlice(ctx, s.CgroupParent, "crib pod sandbox "+s.ID, systemd.Resources{})
}

// removeCgroup deletes the pod cgroup crib made for s: under systemd it
// stops the slice (systemd keeps an empty slice active until then), under
// cgroupfs it removes the directory in every hierarchy it exists in. runc
// removes the containers' cgroups.
func (m *Manager) removeCgroup(ctx context.Context, s *Sandbox) error {
	if !s.OwnCgroup || s.CgroupParent == "" {
		return nil
	}
	if m.cfg.CgroupDriver == "systemd" {
		if m.cfg.Systemd == nil {
			return fmt.Errorf("remove pod slice %s: no systemd client", s.CgroupParent)
		}
		return m.cfg.Systemd.Stop(ctx, s.CgroupParent)
	}
	var dirs []string
	if cgroups.Mode() == cgroups.Unified {
		dirs = []string{filepath.Join("/sys/fs/cgroup", s.CgroupParent)}
	} else {
		hierarchies, err := os.ReadDir("/sys/fs/cgroup")
		if err != nil {
			return fmt.Errorf("remove pod cgroup: %w", err)
		}
		for _, h := range hierarchies {
			dirs = append(dirs, filepath.Join("/sys/fs/cgroup", h.Name(), s.CgroupParent))
		}
	}
	var errs []error
	for _, d := range dirs {
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove pod cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}
