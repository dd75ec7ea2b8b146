package daemon

import (
	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/sandbox"
	"github.com/crib-dev/crib/internal/streaming"
)

// startStreaming opens the streaming server on its configured address and
// serves it in the background until Close.
func (d *Daemon) startStreaming(containers *container.Manager, sandboxes *sandbox.Manager) (*streaming.Server, error) {
	srv, err := streaming.Listen(streaming.Config{Address: d.cfg.Streaming.Address}, streaming.NewRuntime(containers, sandboxes))
	if err != nil {
		return nil, err
	}
	go func() {
		if err := srv.Serve(); err != nil {
			d.log.Error("streaming server stopped", "err", err)
		}
	}()
	d.log.Info("streaming server is serving", "address", srv.Addr())
	return srv, nil
}
