package daemon

import (
	"github.com/crib-dev/crib/internal/streaming"
)

// listenStreaming opens the streaming server's port on its configured
// address; serveStreaming serves it.
func (d *Daemon) listenStreaming() (*streaming.Server, error) {
	srv, err := streaming.Listen(streaming.Config{Address: d.cfg.Streaming.Address}, streaming.NewRuntime(d.containers, d.sandboxes))
	if err != nil {
		return nil, err
	}
	d.opened.add("streaming server", srv.Close)
	return srv, nil
}

// serveStreaming serves the streaming server in the background until
// Shutdown closes it.
func (d *Daemon) serveStreaming() {
	go func() {
		if err := d.streams.Serve(); err != nil {
			d.log.Error("streaming server stopped", "err", err)
		}
	}()
	d.log.Info("streaming server is serving", "address", d.streams.Addr())
}
