package container

import (
	"fmt"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/ociruntime"
)

// SetRuntimes replaces the OCI runtimes by handler and the handlers that
// make recursive read-only mounts (see Config). A container's runtime is
// looked up by its handler at each call, so a reload changes only the
// handlers no container uses.
func (m *Manager) SetRuntimes(runtimes map[string]*ociruntime.Runtime, recursiveReadOnly map[string]bool) {
	m.rtMu.Lock()
	defer m.rtMu.Unlock()
	m.cfg.Runtimes, m.cfg.RecursiveReadOnly = runtimes, recursiveReadOnly
}

func (m *Manager) runtime(handler string) (*ociruntime.Runtime, error) {
	m.rtMu.RLock()
	defer m.rtMu.RUnlock()
	r, ok := m.cfg.Runtimes[handler]
	if !ok {
		return nil, fmt.Errorf("runtime handler %q is not configured: %w", handler, errdefs.ErrNotFound)
	}
	return r, nil
}

func (m *Manager) recursiveReadOnly(handler string) bool {
	m.rtMu.RLock()
	defer m.rtMu.RUnlock()
	return m.cfg.RecursiveReadOnly[handler]
}
