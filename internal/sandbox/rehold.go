package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/crib-dev/crib/internal/lifecycle"
	"github.com/crib-dev/crib/internal/netns"
)

// Rehold mends the ready pods whose pins no longer open because their
// namespace holder ended (it was killed): a pod with a running container
// has its namespaces pinned anew from that container's init, found by
// pids (the host pids of the sandbox's running containers); any other pod
// is made not ready, as one whose pause process died, and the kubelet
// makes it anew. Its cost is a statfs per pin of each ready pod: it runs
// when a holder ended and after a restart, not per call.
func (m *Manager) Rehold(ctx context.Context, pids func(sandboxID string) []int) {
	if m.cfg.NSHold == nil {
		return
	}
	m.mu.RLock()
	ids := make([]string, 0, len(m.byID))
	for id, s := range m.byID {
		if s.State == Ready {
			ids = append(ids, id)
		}
	}
	m.mu.RUnlock()
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		if err := m.rehold(id, pids); err != nil {
			m.log.Error("mend a pod's namespaces after their holder ended", "sandbox", id, "err", err)
		}
	}
}

func (m *Manager) rehold(id string, pids func(string) []int) error {
	s, unlock, err := m.locked(id)
	if s == nil || err != nil {
		return err
	}
	defer unlock()
	if s.State != Ready || pinsHeld(s) {
		return nil
	}
	candidates := pids(id)
	if s.PausePid != 0 && pauseAlive(s) {
		// A pod's pause is in its namespaces when a child of the pod's
		// user namespace made them (netns.PinIn); else repin refuses it.
		candidates = append(candidates, s.PausePid)
	}
	for _, pid := range candidates {
		err := m.repin(s, pid)
		if err == nil {
			m.log.Info("pod namespaces pinned anew from a running container after their holder ended", "sandbox", id, "pid", pid)
			return nil
		}
		m.log.Warn("pin a pod's namespaces anew from its container", "sandbox", id, "pid", pid, "err", err)
	}
	m.log.Info("pod namespaces gone with their holder; sandbox not ready", "sandbox", id)
	s.State = NotReady
	if err := m.save(s); err != nil {
		return err
	}
	m.mu.Lock()
	if cur, ok := m.byID[s.ID]; ok {
		*cur = *s
	}
	m.publish(lifecycle.Stopped, s.ID)
	m.mu.Unlock()
	return nil
}

// repin pins each of the sandbox's namespaces anew from process pid, which
// must be in all of them: a process in the host's namespace of a kind the
// pod has its own of (a pid reused since) is refused.
func (m *Manager) repin(s *Sandbox, pid int) error {
	pins := s.pins()
	for _, pin := range pins {
		kind := filepath.Base(pin)
		src := fmt.Sprintf("/proc/%d/ns/%s", pid, kind)
		same, err := sameFile(src, "/proc/self/ns/"+kind)
		if err != nil {
			return err
		}
		if same {
			return fmt.Errorf("process %d is in the host's %s namespace, not the pod's", pid, kind)
		}
	}
	for _, pin := range pins {
		if err := netns.Repin(m.cfg.NSHold, fmt.Sprintf("/proc/%d/ns/%s", pid, filepath.Base(pin)), pin); err != nil {
			return err
		}
	}
	return nil
}

// pins are the paths of the namespaces the sandbox pinned.
func (s *Sandbox) pins() []string {
	var out []string
	for _, p := range []string{s.NetNS, s.IPCNS, s.UTSNS, s.UserNS} {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// pinsHeld reports whether each namespace the sandbox pinned still opens.
func pinsHeld(s *Sandbox) bool {
	for _, p := range s.pins() {
		if ok, err := netns.IsPinned(p); err != nil || !ok {
			return false
		}
	}
	return true
}

// sameFile reports whether paths a and b open the same file.
func sameFile(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}

// dropUnknownHeld has the holder close what it holds for sandboxes that
// are not recorded: those of a daemon that died between pinning a pod's
// namespaces and recording the pod, or between dropping and removing them.
// The caller is Restore, once every record is loaded.
func (m *Manager) dropUnknownHeld() error {
	if m.cfg.NSHold == nil {
		return nil
	}
	held, err := m.cfg.NSHold.List()
	if err != nil {
		return fmt.Errorf("list held namespaces: %w", err)
	}
	known := make(map[string]bool, len(m.byID))
	for _, s := range m.byID {
		known[filepath.Join(s.Dir, "ns")+"/"] = true
	}
	var errs []error
	for key := range held {
		dir := filepath.Dir(key) + "/"
		if known[dir] || !strings.HasPrefix(key, m.cfg.StateDir) {
			continue
		}
		m.log.Info("drop namespaces held for a sandbox that is not recorded", "key", key)
		if _, err := m.cfg.NSHold.Drop(key); err != nil {
			errs = append(errs, err)
		}
		_ = os.Remove(key)
	}
	return errors.Join(errs...)
}
