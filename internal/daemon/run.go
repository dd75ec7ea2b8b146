package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/api"
	"github.com/crib-dev/crib/internal/ociruntime"
	"github.com/crib-dev/crib/internal/reclaim"
)

// runState is a Run's: cancel ends it, done is closed when it returned.
type runState struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Run restores what the previous daemon left, then serves the CRI socket,
// the local API and the streaming server until ctx is done or Shutdown is
// called, and returns nil then; it returns an error when restoring or
// serving failed. It does not stop serving: Shutdown must follow, in any
// case. Run may be called once, and not after Shutdown.
func (d *Daemon) Run(ctx context.Context) error {
	ctx, finish, err := d.beginRun(ctx)
	if err != nil {
		return err
	}
	defer finish()
	if err := d.restore(ctx); err != nil {
		return err
	}
	if err := d.startNRI(); err != nil {
		return err
	}
	d.monitors.Warm()
	d.netnsSpares.Warm()
	go reclaim.Run(ctx, d.events, d.pullsEnded, reclaim.FreeHeap)
	go d.watchHolder(ctx)
	d.serveStreaming()
	d.serveMetrics()
	return d.serve(ctx)
}

// beginRun records the Run starting on ctx, so that Shutdown can end it
// and wait for it, and returns the Run's context and what ends it.
func (d *Daemon) beginRun(ctx context.Context) (context.Context, func(), error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.shutDown:
		return nil, nil, errors.New("run crib daemon: it is shut down")
	case d.run != nil:
		return nil, nil, errors.New("run crib daemon: it already runs")
	}
	ctx, cancel := context.WithCancel(ctx)
	run := &runState{cancel: cancel, done: make(chan struct{})}
	d.run = run
	return ctx, func() { cancel(); close(run.done) }, nil
}

// Bounds of the CRI server.
const (
	maxRecvMsg           = 16 << 20
	maxConcurrentStreams = 1000
)

// serve serves the CRI and the local API on their sockets until ctx is
// done or a server fails.
func (d *Daemon) serve(ctx context.Context) error {
	lis, err := listen(d.cfg.Socket, 0o660)
	if err != nil {
		return err
	}
	apiLis, err := listen(d.apiSocket(), 0o600)
	if err != nil {
		lis.Close()
		_ = os.Remove(d.cfg.Socket)
		return err
	}
	d.grpc = grpc.NewServer(
		grpc.UnaryInterceptor(d.server.Interceptor),
		grpc.StreamInterceptor(d.server.StreamInterceptor),
		// The kubelet's client sends up to 16 MiB; a request beyond is
		// refused by grpc before it is decoded.
		grpc.MaxRecvMsgSize(maxRecvMsg),
		// Calls in flight on one connection: far above what a kubelet
		// with its probes and pod workers has at once; beyond it, the
		// client waits for a stream rather than fail.
		grpc.MaxConcurrentStreams(maxConcurrentStreams),
		// ExecSync answers with up to 16 MiB of stdout and as much of
		// stderr, plus the message's own framing.
		grpc.MaxSendMsgSize(2*ociruntime.DefaultExecOutputCap+1<<20),
	)
	runtimeapi.RegisterRuntimeServiceServer(d.grpc, d.server)
	runtimeapi.RegisterImageServiceServer(d.grpc, d.server)
	d.api = &http.Server{Handler: api.Handler(d.images, d.log), ReadHeaderTimeout: 10 * time.Second}

	errc := make(chan error, 2)
	go func() { errc <- d.grpc.Serve(lis) }()
	go func() { errc <- d.api.Serve(apiLis) }()
	close(d.ready)
	d.log.Info("crib is serving", "socket", d.cfg.Socket, "root", d.cfg.Root, "state", d.cfg.State, "version", Version)

	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", d.cfg.Socket, err)
	case <-ctx.Done():
		return nil
	}
}

// apiSocket is where crib's local API is served.
func (d *Daemon) apiSocket() string { return filepath.Join(d.cfg.State, api.SocketName) }

// listen opens a unix socket at path with mode, replacing a stale one. It
// is bound under a hidden name beside path and renamed into place once it
// has its mode, so that nobody ever finds it at path with the umask's mode
// (a test that looked at once saw 0755 under emulation). Shutdown removes
// it from path.
func listen(path string, mode os.FileMode) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o711); err != nil {
		return nil, fmt.Errorf("create socket dir: %w", err)
	}
	if conn, err := net.DialTimeout("unix", path, time.Second); err == nil {
		conn.Close()
		return nil, fmt.Errorf("socket %s is in use: is another crib running?", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	bound := filepath.Join(filepath.Dir(path), "."+filepath.Base(path))
	if err := os.Remove(bound); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: bound, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// Its name changes: Shutdown removes it from path.
	lis.SetUnlinkOnClose(false)
	if err := os.Chmod(bound, mode); err != nil {
		lis.Close()
		_ = os.Remove(bound)
		return nil, fmt.Errorf("chmod socket: %w", err)
	}
	if err := os.Rename(bound, path); err != nil {
		lis.Close()
		_ = os.Remove(bound)
		return nil, fmt.Errorf("put socket in place: %w", err)
	}
	return lis, nil
}
