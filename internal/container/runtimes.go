package container

import (
	"fmt"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/ociruntime"
)

// SetRuntimes replaces the OCI runtimes by handler and what each supports
// (see Config). A container's runtime is looked up by its handler at each
// call, so a reload changes only the handlers no container uses.
func (m *Manager) SetRuntimes(runtimes map[string]*ociruntime.Runtime, support map[string]ociruntime.Support) {
	m.rtMu.Lock()
	defer m.rtMu.Unlock()
	m.cfg.Runtimes, m.cfg.Support = runtimes, support
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

func (m *Manager) support(handler string) ociruntime.Support {
	m.rtMu.RLock()
	defer m.rtMu.RUnlock()
	s, ok := m.cfg.Support[handler]
	if !ok {
		s.UserNamespacesMissing = "the handler is not configured"
	}
	return s
}

// UserNamespaces says whether pods of handler can have user namespaces of
// their own: nil if so, else a FailedPrecondition error naming what is
// missing.
func (m *Manager) UserNamespaces(handler string) error {
	if missing := m.support(handler).UserNamespacesMissing; missing != "" {
		return fmt.Errorf("user namespaces are not supported: %s: %w", missing, errdefs.ErrFailedPrecondition)
	}
	return nil
}
