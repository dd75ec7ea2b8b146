package daemon

import (
	"context"
	"time"

	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/runtimemetrics"
	"github.com/crib-dev/crib/internal/sandbox"
)

// listenMetrics has the metrics count containers, sandboxes and monitors
// at each scrape, from the managers' own lists; when the configuration
// asks for metrics, it also opens their port, which serveMetrics serves.
func (d *Daemon) listenMetrics() error {
	err := d.metrics.Register(runtimemetrics.NewStateCollector(
		runtimemetrics.Counted{
			Name:   "crib_containers",
			Help:   "Containers by state.",
			States: []string{string(container.Created), string(container.Running), string(container.Exited), string(container.Unknown)},
			List: func() []string {
				var out []string
				for _, c := range d.containers.List() {
					out = append(out, string(c.State))
				}
				return out
			},
		},
		runtimemetrics.Counted{
			Name:   "crib_sandboxes",
			Help:   "Pod sandboxes by state.",
			States: []string{string(sandbox.Ready), string(sandbox.NotReady)},
			List: func() []string {
				var out []string
				for _, s := range d.sandboxes.List() {
					out = append(out, string(s.State))
				}
				return out
			},
		},
	).Value("crib_monitors_idle", "Monitor processes waiting for a container.", func() float64 {
		return float64(d.monitors.Idle())
	}).Value("crib_monitors_running", "Monitor processes with a running container (one per running container).", func() float64 {
		n := 0
		for _, c := range d.containers.List() {
			if c.State == container.Running {
				n++
			}
		}
		return float64(n)
	}))
	if err != nil || d.cfg.Metrics.Address == "" {
		return err
	}
	srv, err := d.metrics.Listen(d.cfg.Metrics.Address)
	if err != nil {
		return err
	}
	d.metricsSrv = srv
	d.opened.add("metrics server", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Close(ctx)
	})
	return nil
}

// serveMetrics serves /metrics in the background until Shutdown closes
// its server, when the configuration asks for metrics.
func (d *Daemon) serveMetrics() {
	if d.metricsSrv == nil {
		return
	}
	go func() {
		if err := d.metricsSrv.Serve(); err != nil {
			d.log.Error("metrics server stopped", "err", err)
		}
	}()
	d.log.Info("metrics are served", "address", d.metricsSrv.Addr().String())
}

// MetricsAddr is the address /metrics is served on, "" when metrics are
// off.
func (d *Daemon) MetricsAddr() string {
	if d.metricsSrv == nil {
		return ""
	}
	return d.metricsSrv.Addr().String()
}
