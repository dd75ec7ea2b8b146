package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/mount"
)

// prepareEmptyDir makes a directory (mode 0777, as the kubelet does) or, for
// medium Memory, mounts a tmpfs on it sized by sizeLimit. An existing
// directory keeps its content; a tmpfs already mounted is left alone.
func (p *preparer) prepareEmptyDir(name string, src *corev1.EmptyDirVolumeSource) (string, error) {
	dir := p.volumeDir(pluginEmptyDir, name)
	switch src.Medium {
	case corev1.StorageMediumDefault:
		if err := makeDir(dir, 0o777); err != nil {
			return "", fmt.Errorf("volume %q: emptyDir: %w", name, err)
		}
	case corev1.StorageMediumMemory:
		opts := []string{"nosuid", "nodev", "mode=0777"}
		if src.SizeLimit != nil && src.SizeLimit.Sign() > 0 {
			opts = append(opts, fmt.Sprintf("size=%d", src.SizeLimit.Value()))
		}
		if err := p.m.ensureTmpfs(dir, opts); err != nil {
			return "", fmt.Errorf("volume %q: emptyDir: %w", name, err)
		}
	default:
		return "", fmt.Errorf("volume %q: emptyDir medium %q is not supported by crib's standalone agent: %w", name, src.Medium, errdefs.ErrInvalidArgument)
	}
	return dir, nil
}

// makeDir creates dir and its parents and gives dir exactly mode, whatever
// the umask.
func makeDir(dir string, mode os.FileMode) error {
	if err := os.MkdirAll(dir, mode); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("create %s: not a directory: %w", dir, errdefs.ErrInvalidArgument)
	}
	if fi.Mode().Perm() != mode {
		if err := os.Chmod(dir, mode); err != nil {
			return fmt.Errorf("chmod %s: %w", dir, err)
		}
	}
	return nil
}

// ensureTmpfs mounts a tmpfs with opts on dir unless dir already is a mount
// point (an earlier Prepare mounted it).
func (m *Manager) ensureTmpfs(dir string, opts []string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	mounted, err := mount.IsMountPoint(dir)
	if err != nil {
		return err
	}
	if mounted {
		return nil
	}
	tmpfs := mount.Mount{Type: "tmpfs", Source: "tmpfs", Options: opts}
	if err := tmpfs.Mount(dir); err != nil {
		return err
	}
	m.log.Debug("tmpfs mounted", "path", dir)
	return nil
}

// Usage reports the bytes each emptyDir of pod uid uses on its filesystem,
// by volume name, counted like du(1): allocated blocks of every file,
// directory and symlink, hard links once, symlinks never followed. A pod
// without volumes reports an empty map.
func (m *Manager) Usage(uid string) (map[string]int64, error) {
	if err := checkName("pod uid", uid); err != nil {
		return nil, fmt.Errorf("measure volumes: %w", err)
	}
	usage := map[string]int64{}
	podDir, err := m.podDir(uid, false)
	if err != nil || podDir == "" {
		return usage, err
	}
	base := filepath.Join(podDir, "volumes", pluginEmptyDir)
	entries, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return usage, nil
	}
	if err != nil {
		return nil, fmt.Errorf("measure volumes of pod %s: %w", uid, err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n, err := diskUsage(filepath.Join(base, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("measure volume %q of pod %s: %w", e.Name(), uid, err)
		}
		usage[e.Name()] = n
	}
	return usage, nil
}

// diskUsage sums the allocated bytes under dir. Entries that vanish while
// it walks (the container is still writing) are skipped.
func diskUsage(dir string) (int64, error) {
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			total += fi.Size()
			return nil
		}
		if st.Nlink > 1 && !fi.IsDir() {
			key := inode{uint64(st.Dev), st.Ino}
			if seen[key] {
				return nil
			}
			seen[key] = true
		}
		total += st.Blocks * 512
		return nil
	})
	return total, err
}

// OverLimit returns the first disk-backed emptyDir of pod whose usage (as
// Usage reports it) exceeds its sizeLimit; the kubelet evicts such a pod.
// Memory-backed emptyDirs are skipped: their tmpfs is mounted with the limit
// as its size, so the kernel enforces it.
func OverLimit(pod *corev1.Pod, usage map[string]int64) (volume string, over bool) {
	if pod == nil {
		return "", false
	}
	for _, v := range pod.Spec.Volumes {
		ed := v.EmptyDir
		if ed == nil || ed.Medium == corev1.StorageMediumMemory || ed.SizeLimit == nil || ed.SizeLimit.Sign() <= 0 {
			continue
		}
		used, ok := usage[v.Name]
		if ok && used > ed.SizeLimit.Value() {
			return v.Name, true
		}
	}
	return "", false
}
