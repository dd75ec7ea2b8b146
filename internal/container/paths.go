package container

import "path/filepath"

// StatsPaths are where a container's usage can be read on the host.
type StatsPaths struct {
	// CgroupsPath is the OCI linux.cgroupsPath the container was created
	// with, in the configured cgroup driver's form.
	CgroupsPath string
	// WritableLayer is the overlay upper dir of the container's rootfs.
	WritableLayer string
	// FsRoot holds every container's bundle; it is on the filesystem of the
	// writable layers.
	FsRoot string
	// StateDir holds the container's runtime files (on the state root,
	// usually a tmpfs) until the container is removed.
	StateDir string
}

// StatsPaths returns where c's usage can be read. It does no I/O; it fails
// only when c's sandbox is gone.
func (m *Manager) StatsPaths(c Container) (StatsPaths, error) {
	sb, err := m.sandboxes.Get(c.SandboxID)
	if err != nil {
		return StatsPaths{}, err
	}
	return StatsPaths{
		CgroupsPath:   m.cgroupsPath(sb, c.ID),
		WritableLayer: filepath.Join(m.bundle(c.ID), "fs"),
		FsRoot:        m.cfg.BundleDir,
		StateDir:      m.stateDir(c.ID),
	}, nil
}
