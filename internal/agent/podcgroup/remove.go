package podcgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	"github.com/crib-dev/crib/internal/cgroupfs"
)

// How long RemovePod waits for killed processes to leave the cgroup: the
// kernel needs a moment to tear a killed process down. The waits double
// from killWait; there are killAttempts rounds of kill and wait.
const (
	killAttempts = 10
	killWait     = 5 * time.Millisecond
)

// RemovePod removes the pod's cgroup, in whichever QoS class it is, with
// every cgroup below it (the containers' cgroups a runtime left). Processes
// still in any of them are killed with SIGKILL first, as the kubelet does.
// Under systemd the pod's slice is then stopped, which takes the units
// below it (the containers' scopes) and their cgroups with it; the
// directories systemd does not know (runc's in v1 cgroupfs.Hierarchies systemd
// does not manage, an earlier crib's) are removed after. A pod without a
// cgroup is not an error.
func (m *Manager) RemovePod(uid string) error {
	if m.err != nil {
		return m.err
	}
	if err := checkUID(uid); err != nil {
		return err
	}
	h, err := cgroupfs.Find(m.fs)
	if err != nil {
		return err
	}
	var errs []error
	for _, qos := range classes {
		name := m.names.podName(qos, uid)
		rel, err := m.names.dir(name)
		if err != nil {
			return err
		}
		var dirs []string
		for _, root := range h.Roots {
			if d := filepath.Join(root, rel); cgroupfs.Exists(d) {
				dirs = append(dirs, d)
			}
		}
		// A slice is stopped even without a directory: systemd may know
		// the unit still, and Stop of one it does not know is a no-op.
		if len(dirs) == 0 && m.units == nil {
			continue
		}
		if err := killAll(dirs); err != nil {
			errs = append(errs, fmt.Errorf("remove cgroup of pod %s: %w", uid, err))
			continue
		}
		if m.units != nil {
			if err := m.stopSlice(name); err != nil {
				errs = append(errs, fmt.Errorf("remove cgroup of pod %s: %w", uid, err))
				continue
			}
		}
		for _, d := range dirs {
			if err := m.removeTree(d); err != nil {
				errs = append(errs, fmt.Errorf("remove cgroup of pod %s: %w", uid, err))
			}
		}
		if len(dirs) > 0 {
			m.log.Debug("pod cgroup removed", "pod", uid, "cgroup", rel)
		}
	}
	return errors.Join(errs...)
}

// killAll kills every process in the cgroups dirs and below them until
// none is left.
func killAll(dirs []string) error {
	wait := killWait
	for range killAttempts {
		pids, err := treePids(dirs)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			if pid == os.Getpid() {
				return fmt.Errorf("kill processes in cgroup: the agent itself (pid %d) is in it: %w", pid, errdefs.ErrFailedPrecondition)
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("kill process %d in cgroup: %w", pid, err)
			}
		}
		time.Sleep(wait)
		wait *= 2
	}
	pids, err := treePids(dirs)
	if err != nil {
		return err
	}
	if len(pids) > 0 {
		return fmt.Errorf("kill processes in cgroup: %d still running after SIGKILL: %w", len(pids), errdefs.ErrFailedPrecondition)
	}
	return nil
}

// treePids lists the processes in the cgroups dirs and below, each once.
func treePids(dirs []string) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			if !e.IsDir() {
				return nil
			}
			pids, err := readPids(p)
			if err != nil {
				return err
			}
			for _, pid := range pids {
				if !seen[pid] {
					seen[pid] = true
					out = append(out, pid)
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list processes in cgroup %s: %w", d, err)
		}
	}
	return out, nil
}

// removeTree removes the cgroup dir and every cgroup below it, the deepest
// first. A directory already gone is fine.
func (m *Manager) removeTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove cgroup %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := m.removeTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := m.rmdir(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove cgroup %s: %w", dir, err)
	}
	return nil
}
