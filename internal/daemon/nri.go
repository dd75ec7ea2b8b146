package daemon

import (
	"github.com/crib-dev/crib/internal/cdi"
	"github.com/crib-dev/crib/internal/nri"
	"github.com/crib-dev/crib/internal/resclass"
)

// buildNRI makes the NRI adaptation when [nri] enables it, with its
// metrics; it starts once the managers have restored (startNRI).
func (d *Daemon) buildNRI(cdiRegistry *cdi.Registry, classes *resclass.Classes) error {
	if !d.cfg.NRI.Enable {
		return nil
	}
	m := nri.NewMetrics()
	for _, c := range m.Collectors() {
		if err := d.metrics.Register(c); err != nil {
			return err
		}
	}
	n, err := nri.New(d.cfg.NRI, nri.Options{Version: Version, Log: d.log, CDI: cdiRegistry, Classes: classes, Metrics: m})
	if err != nil {
		return err
	}
	d.nri = n
	// Stopping one that never started stops nothing.
	d.opened.add("NRI", func() error { n.Stop(); return nil })
	return nil
}

// startNRI starts the pre-installed plugins, synchronised with the pods and
// containers restored, and opens the socket of external ones.
func (d *Daemon) startNRI() error {
	if d.nri == nil {
		return nil
	}
	return d.nri.Start(d.sandboxes, d.containers)
}
