package container

import (
	"fmt"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/ociruntime"
)

// SetRuntimes replaces the OCI runtimes by handler (see Config). A
// container's runtime is looked up by its handler at each call, so a reload
// changes only the handlers no container uses.
func (m *Manager) SetRuntimes(runtimes map[string]*ociruntime.Runtime) {
	m.rtMu.Lock()
	defer m.rtMu.Unlock()
	m.cfg.Runtimes = runtimes
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

// support is what handler's runtime makes possible; a handler that is not
// configured supports nothing.
func (m *Manager) support(handler string) ociruntime.Support {
	r, err := m.runtime(handler)
	if err != nil {
		return ociruntime.Support{UserNamespacesMissing: err.Error()}
	}
	return r.Support
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
