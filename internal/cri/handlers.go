package cri

import "slices"

// SetHandlers replaces the runtime handlers the server offers (see
// Info.Handlers), as a configuration reload changes them.
func (s *Server) SetHandlers(handlers []Handler) {
	s.infoMu.Lock()
	defer s.infoMu.Unlock()
	s.info.Handlers = slices.Clone(handlers)
}

// currentInfo is a copy of the server's Info with the handlers in force.
func (s *Server) currentInfo() Info {
	s.infoMu.RLock()
	defer s.infoMu.RUnlock()
	return s.info
}
