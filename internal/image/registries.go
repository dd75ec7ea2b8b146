package image

import "github.com/google/go-containerregistry/pkg/name"

// SetRegistries replaces the per-registry settings (see
// Config.Registries). Pulls that start afterwards use the new ones; a pull
// in progress keeps the endpoints it started with.
func (s *Store) SetRegistries(r map[string]Registry) {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	s.cfg.Registries = r
}

// registry is the settings of host; Docker Hub's may be keyed by either
// of its names.
func (s *Store) registry(host string) Registry {
	s.regMu.RLock()
	defer s.regMu.RUnlock()
	reg, ok := s.cfg.Registries[host]
	if !ok && host == dockerHubHost {
		reg = s.cfg.Registries[name.DefaultRegistry]
	}
	return reg
}
