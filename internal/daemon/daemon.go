package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/crib-dev/crib/internal/checkpoint"
	"github.com/crib-dev/crib/internal/config"
	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/cri"
	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/lifecycle"
	"github.com/crib-dev/crib/internal/monitor"
	"github.com/crib-dev/crib/internal/netns"
	"github.com/crib-dev/crib/internal/network"
	"github.com/crib-dev/crib/internal/nri"
	"github.com/crib-dev/crib/internal/nshold"
	"github.com/crib-dev/crib/internal/runtimemetrics"
	"github.com/crib-dev/crib/internal/sandbox"
	"github.com/crib-dev/crib/internal/streaming"
)

// Version is crib's version, set at build time.
var Version = "0.1.0-dev"

// ShutdownGrace is how long callers let Shutdown wait for calls in flight
// before it cuts them off.
const ShutdownGrace = 10 * time.Second

// Daemon is one crib runtime: New builds it, Run restores and serves,
// Shutdown stops serving and closes what New opened.
type Daemon struct {
	cfg config.Config
	log *slog.Logger
	// monitorBin is the binary run as `monitorBin monitor` beside each
	// container and `monitorBin pause` for a shared-PID pod: crib-monitor,
	// or crib itself.
	monitorBin string

	// The parts New builds.
	images     *image.Store
	network    *network.Manager
	sandboxes  *sandbox.Manager
	containers *container.Manager
	// checkpoints writes containers' checkpoint archives.
	checkpoints *checkpoint.Service
	monitors    *monitor.Pool
	// nri is the NRI adaptation, nil when [nri] enable is false.
	nri *nri.NRI
	// netnsSpares are network namespaces made ahead of pods.
	netnsSpares *netns.Spares
	// nshold is the connection to the process holding pods' namespaces.
	nshold  *nshold.Lazy
	streams *streaming.Server
	server  *cri.Server
	// events carries the managers' lifecycle events to the CRI's
	// GetContainerEvents streams.
	events *lifecycle.Broadcaster[lifecycle.Event]
	// metrics are kept always (the pod start trace is logged from them);
	// metricsSrv serves them when the configuration asks for it.
	metrics    *runtimemetrics.Metrics
	metricsSrv *runtimemetrics.Server
	// pullsEnded tells the reclaimer that a pull ended (pullWatch).
	pullsEnded chan struct{}
	// opened closes what New opened, newest first.
	opened closers

	ready chan struct{}

	// reloadMu serialises Reloads, the only writers of d.cfg after New.
	reloadMu sync.Mutex

	mu       sync.Mutex
	run      *runState // the Run in progress or done, nil before
	shutDown bool

	// The servers Run starts; Shutdown reads them once Run has returned.
	grpc *grpc.Server
	api  *http.Server

	shutdownOnce sync.Once
	shutdownErr  error
}

// New validates cfg and builds every part of the runtime on it, opening
// the metadata and image stores and the streaming server's port; monitorBin is
// the program run as `monitorBin monitor` and `monitorBin pause`
// (crib-monitor, or the crib binary). ctx bounds the building only. What New opened stays open until
// Shutdown; when New fails, it has closed it again.
func New(ctx context.Context, cfg config.Config, monitorBin string, log *slog.Logger) (*Daemon, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	d := &Daemon{
		cfg: cfg, log: log, monitorBin: monitorBin, ready: make(chan struct{}),
		metrics: runtimemetrics.New(log), pullsEnded: make(chan struct{}, 1),
	}
	if err := d.build(ctx); err != nil {
		if cerr := d.opened.closeAll(); cerr != nil {
			log.Warn("close what a failed start opened", "err", cerr)
		}
		return nil, err
	}
	return d, nil
}

// Ready is closed once the daemon accepts calls on its socket.
func (d *Daemon) Ready() <-chan struct{} { return d.ready }
