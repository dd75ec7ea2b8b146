package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/cgroups/v3"
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

// removeCgroup deletes the pod cgroup crib made for a cgroupfs pod, in every
// hierarchy it exists in. runc removes the containers' cgroups; the pod's
// parent directory is crib's. Systemd removes an empty slice itself.
func removeCgroup(driver, path string) error {
	if driver == "systemd" || path == "" {
		return nil
	}
	var dirs []string
	if cgroups.Mode() == cgroups.Unified {
		dirs = []string{filepath.Join("/sys/fs/cgroup", path)}
	} else {
		hierarchies, err := os.ReadDir("/sys/fs/cgroup")
		if err != nil {
			return fmt.Errorf("remove pod cgroup: %w", err)
		}
		for _, h := range hierarchies {
			dirs = append(dirs, filepath.Join("/sys/fs/cgroup", h.Name(), path))
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
