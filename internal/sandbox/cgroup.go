package sandbox

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/cgroupfs"
	"github.com/crib-dev/crib/internal/kernelstats"
	"github.com/crib-dev/crib/internal/systemd"
)

// podCgroup is the cgroup parent of the pod's containers: the kubelet's
// choice, or one crib makes (and so must remove) under its configured
// parent. Under the systemd driver the kubelet's parent must be a slice;
// a path to one ("/test.slice", as critest sends) stands for its last
// element, as containerd and CRI-O read it.
func (m *Manager) podCgroup(kubeletParent, id string) (string, bool, error) {
	slices := m.cfg.CgroupDriver == "systemd"
	if kubeletParent != "" {
		if !slices {
			return kubeletParent, false, nil
		}
		slice := path.Base(kubeletParent)
		if _, err := kernelstats.ExpandSlice(slice); err != nil {
			return "", false, fmt.Errorf("config.linux.cgroup_parent %q: the systemd cgroup driver wants a slice such as kubepods-pod1.slice: %w",
				kubeletParent, errdefs.ErrInvalidArgument)
		}
		return slice, false, nil
	}
	if slices {
		parent := strings.TrimSuffix(m.cfg.CgroupParent, ".slice")
		if parent == "" {
			parent = "crib"
		}
		return parent + "-" + id[:12] + ".slice", true, nil
	}
	return filepath.Join(m.cfg.CgroupParent, id), true, nil
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

// removeCgroup deletes the pod cgroup crib made for s: a slice (whatever
// the driver is now) is stopped, since systemd keeps an empty slice active
// until then; a cgroupfs directory is removed in every hierarchy it exists
// in. runc removes the containers' cgroups.
func (m *Manager) removeCgroup(ctx context.Context, s *Sandbox) error {
	if !s.OwnCgroup || s.CgroupParent == "" {
		return nil
	}
	if strings.HasSuffix(s.CgroupParent, ".slice") {
		if m.cfg.Systemd == nil {
			return fmt.Errorf("remove pod slice %s: systemd is not running", s.CgroupParent)
		}
		return m.cfg.Systemd.Stop(ctx, s.CgroupParent)
	}
	// The whole subtree: a runtime killed while it made a container's
	// cgroup leaves it, and maybe a process, below the pod's.
	if err := cgroupfs.RemoveTree("/sys/fs/cgroup", s.CgroupParent); err != nil {
		return fmt.Errorf("remove pod cgroup: %w", err)
	}
	return nil
}
