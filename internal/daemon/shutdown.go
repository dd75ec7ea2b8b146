package daemon

import (
	"context"
	"os"
)

// Shutdown stops the daemon: it ends the GetContainerEvents streams, ends
// a Run in progress and waits for it to return, stops serving (gracefully
// while ctx allows, then cutting off the calls still in flight), removes
// the sockets and closes what New opened. Containers, their monitors and
// pods' pause processes keep running, for the next daemon to adopt.
// Shutdown may be called more than once; later calls return what the
// first returned.
func (d *Daemon) Shutdown(ctx context.Context) error {
	d.shutdownOnce.Do(func() { d.shutdownErr = d.shutdown(ctx) })
	return d.shutdownErr
}

func (d *Daemon) shutdown(ctx context.Context) error {
	d.log.Info("crib is shutting down; containers keep running")
	// Event streams last as long as their callers: end them, or the
	// graceful stop would wait for them.
	d.events.Close()
	d.endRun()
	d.stopServing(ctx)
	return d.opened.closeAll()
}

// endRun refuses later Runs and ends the one in progress, if any, waiting
// until it has returned: its servers are then Shutdown's to stop.
func (d *Daemon) endRun() {
	d.mu.Lock()
	d.shutDown = true
	run := d.run
	d.mu.Unlock()
	if run != nil {
		run.cancel()
		<-run.done
	}
}

// stopServing stops the servers Run started and removes their sockets.
func (d *Daemon) stopServing(ctx context.Context) {
	if d.grpc == nil {
		return
	}
	stopped := make(chan struct{})
	go func() { d.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		d.log.Warn("calls still in flight cut off at shutdown", "err", ctx.Err())
		d.grpc.Stop()
		<-stopped
	}
	_ = d.api.Close()
	_ = os.Remove(d.cfg.Socket)
	_ = os.Remove(d.apiSocket())
}
