package container

import (
	"fmt"
	"slices"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/cdi"
)

// cdiDevices resolves the CDI devices cfg asks for, in its cdi_devices
// field and its cdi.k8s.io/ annotations, each once. A bad name, or a
// device that is unknown or cannot be injected, is an InvalidArgument
// naming it.
func (m *Manager) cdiDevices(cfg *runtimeapi.ContainerConfig) (*cdi.Devices, error) {
	var names []string
	for i, d := range cfg.GetCDIDevices() {
		if err := cdi.CheckName(d.GetName()); err != nil {
			return nil, fmt.Errorf("config.cdi_devices[%d]: %w", i, err)
		}
		names = append(names, d.GetName())
	}
	annotated, err := cdi.Annotated(cfg.GetAnnotations())
	if err != nil {
		return nil, fmt.Errorf("config.annotations: %w", err)
	}
	for _, name := range annotated {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	ds, err := m.cfg.CDI.Resolve(names)
	if err != nil {
		return nil, fmt.Errorf("config.cdi_devices: %w", err)
	}
	return ds, nil
}
