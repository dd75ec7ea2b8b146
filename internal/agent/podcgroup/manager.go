package podcgroup

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/cgroupfs"
	"github.com/crib-dev/crib/internal/systemd"
)

// DefaultFS is where cgroup filesystems are mounted.
const DefaultFS = "/sys/fs/cgroup"

// Config says where the pod cgroups go and how they are named.
type Config struct {
	// Root is the cgroup of all pods, relative to each hierarchy's root:
	// "kubepods" (or "/kubepods") with the cgroupfs driver, "kubepods" or
	// "kubepods.slice" with the systemd driver. Empty means "kubepods".
	Root string
	// Driver is "cgroupfs" (the default when empty) or "systemd".
	Driver string
	// FS is where the cgroup filesystems are mounted; empty means
	// DefaultFS.
	FS string
	// Systemd makes the slices of the systemd driver. Nil with Driver
	// "systemd" says systemd is not running: every method then fails, as
	// slices made behind systemd's back would be fought over by it.
	Systemd *systemd.Client
}

// Manager creates, updates, lists and removes the pod cgroups. It holds no
// cgroup state: every call reads what is on disk.
type Manager struct {
	fs    string
	names naming
	err   error // a configuration error, returned by every method
	log   *slog.Logger
	// rmdir removes one empty cgroup directory; tests on a plain
	// directory replace it.
	rmdir func(string) error
	// units makes, sizes and stops the slices under the systemd driver;
	// nil makes every cgroup with cgroupfs writes.
	units sliceUnits
}

// New returns a Manager for cfg. It does no I/O; a bad cfg is reported by
// every method.
func New(cfg Config, log *slog.Logger) *Manager {
	m := newManager(cfg, log)
	if m.err == nil && m.names.systemd {
		if cfg.Systemd == nil {
			m.err = fmt.Errorf("cgroup driver systemd: systemd is not running on this host: %w", errdefs.ErrFailedPrecondition)
		} else {
			m.units = cfg.Systemd
		}
	}
	return m
}

// newManager is New without systemd: every cgroup, a slice too, is made
// with cgroupfs writes. Tests use it to check the systemd naming on a
// plain directory.
func newManager(cfg Config, log *slog.Logger) *Manager {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Root == "" {
		cfg.Root = "kubepods"
	}
	if cfg.FS == "" {
		cfg.FS = DefaultFS
	}
	n, err := newNaming(cfg.Root, cfg.Driver)
	return &Manager{fs: cfg.FS, names: n, err: err, log: log, rmdir: unix.Rmdir}
}

// CgroupParent is the value podconfig.Options.CgroupParent must have for
// the sandboxes to land in the cgroups this Manager makes: "/kubepods"
// with the cgroupfs driver, "kubepods.slice" with systemd.
func (m *Manager) CgroupParent() string {
	return m.names.parent()
}

// PodCgroup is the pod's cgroup as EnsurePod names it, without any I/O.
func (m *Manager) PodCgroup(pod *corev1.Pod) string {
	return m.names.podName(podconfig.QOSClass(pod), string(pod.UID))
}

// Setup creates the root and the Burstable and BestEffort QoS cgroups and
// gives BestEffort the minimum CPU share; Burstable keeps the kernel's
// default until UpdateQOS. It is idempotent.
func (m *Manager) Setup() error {
	if m.err != nil {
		return m.err
	}
	return m.setQOSShares(map[corev1.PodQOSClass]uint64{corev1.PodQOSBestEffort: cgroupfs.MinShares})
}

// create makes the named cgroup and its parents in every hierarchy and
// returns its path below the cgroupfs.Hierarchies' roots.
func (m *Manager) create(h cgroupfs.Hierarchies, name string) (string, error) {
	levels, err := m.names.levels(name)
	if err != nil {
		return "", err
	}
	for _, root := range h.Roots {
		if err := h.MkdirLevels(root, levels); err != nil {
			return "", err
		}
	}
	return levels[len(levels)-1], nil
}

// EnsurePod creates the pod's cgroup in its QoS class, or finds it, and
// writes the pod's limits (PodLimits) to it, so a resized pod gets its new
// limits. It returns the cgroup's name, the sandbox's CgroupParent. An
// empty cgroup the pod left in another QoS class is removed; a busy one is
// left for RemovePod.
func (m *Manager) EnsurePod(pod *corev1.Pod) (string, error) {
	if m.err != nil {
		return "", m.err
	}
	uid := string(pod.UID)
	if err := checkUID(uid); err != nil {
		return "", err
	}
	h, err := cgroupfs.Find(m.fs)
	if err != nil {
		return "", err
	}
	qos := podconfig.QOSClass(pod)
	name := m.names.podName(qos, uid)
	if m.units != nil {
		if err := m.ensureSlice(name, podDescription(pod), cgroupfs.SliceResources(PodLimits(pod))); err != nil {
			return "", fmt.Errorf("ensure cgroup of pod %s: %w", uid, err)
		}
	} else {
		rel, err := m.create(h, name)
		if err != nil {
			return "", fmt.Errorf("ensure cgroup of pod %s: %w", uid, err)
		}
		if err := h.Apply(rel, PodLimits(pod)); err != nil {
			return "", fmt.Errorf("ensure cgroup of pod %s: %w", uid, err)
		}
	}
	for _, other := range classes {
		if other != qos {
			m.dropStale(h, other, uid)
		}
	}
	m.log.Debug("pod cgroup ensured", "pod", uid, "cgroup", name)
	return name, nil
}

// dropStale removes the pod's cgroup in a QoS class it no longer belongs
// to when nothing is in it.
func (m *Manager) dropStale(h cgroupfs.Hierarchies, qos corev1.PodQOSClass, uid string) {
	name := m.names.podName(qos, uid)
	rel, err := m.names.dir(name)
	if err != nil {
		return
	}
	if m.units != nil {
		m.dropStaleSlice(h, name, rel, uid)
		return
	}
	for _, root := range h.Roots {
		dir := filepath.Join(root, rel)
		if !cgroupfs.Exists(dir) {
			continue
		}
		if err := m.removeTree(dir); err != nil {
			m.log.Debug("stale pod cgroup left in place", "pod", uid, "cgroup", dir, "err", err)
		}
	}
}

// Pods lists the pod cgroups found in any hierarchy, by pod UID, with the
// names EnsurePod returns. Under systemd too it reads the directories
// rather than asking systemd for its units: an active slice has its
// cgroup directory, so one code path serves both drivers without a D-Bus
// round trip, and it also finds a slice directory systemd does not know
// (see RemovePod), which RemovePod cleans up.
func (m *Manager) Pods() (map[string]string, error) {
	if m.err != nil {
		return nil, m.err
	}
	h, err := cgroupfs.Find(m.fs)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, qos := range classes {
		rel, err := m.names.dir(m.names.qosName(qos))
		if err != nil {
			return nil, err
		}
		for _, root := range h.Roots {
			entries, err := os.ReadDir(filepath.Join(root, rel))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("list pod cgroups: %w", err)
			}
			for _, e := range entries {
				if !e.IsDir() {
					continue
				}
				if uid, ok := m.names.uidOf(qos, e.Name()); ok {
					out[uid] = m.names.podName(qos, uid)
				}
			}
		}
	}
	return out, nil
}
