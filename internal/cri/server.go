package cri

import (
	"log/slog"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/checkpoint"
	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/lifecycle"
	"github.com/crib-dev/crib/internal/ociruntime"
	"github.com/crib-dev/crib/internal/sandbox"
	"github.com/crib-dev/crib/internal/statsservice"
)

// Info is what the server reports about the runtime.
type Info struct {
	// Version is crib's version.
	Version string
	// CgroupDriver is "cgroupfs" or "systemd".
	CgroupDriver string
	// Handlers are the usable runtime handlers, "" (the default) first.
	Handlers []Handler
}

// Network is what the server needs of pod networking.
type Network interface {
	// Ready reports whether pods can be networked, and why not.
	Ready() (bool, string)
	// SetPodCIDR applies the kubelet's pod CIDR to the default network.
	SetPodCIDR(cidr string) error
}

// Handler is one runtime handler and what it supports.
type Handler struct {
	Name string
	ociruntime.Support
}

// handler returns the handler named name.
func (i Info) handler(name string) (Handler, bool) {
	for _, h := range i.Handlers {
		if h.Name == name {
			return h, true
		}
	}
	return Handler{}, false
}

// Streams is what the streaming RPCs need of the streaming server: a
// single-use URL for each session.
type Streams interface {
	GetExec(*runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	GetAttach(*runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
	GetPortForward(*runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error)
}

// Config is what a Server reports and the parts it calls.
type Config struct {
	// Info is what the server reports about the runtime.
	Info       Info
	Sandboxes  *sandbox.Manager
	Containers *container.Manager
	// Checkpoints writes checkpoint archives; nil makes
	// CheckpointContainer Unimplemented.
	Checkpoints *checkpoint.Service
	Images      *image.Store
	Network     Network
	Streams     Streams
	// Usage reads the figures of the stats RPCs and ImageFsInfo.
	Usage *statsservice.Service
	// Events carries the managers' lifecycle events to
	// GetContainerEvents; nil makes that RPC Unimplemented.
	Events *lifecycle.Broadcaster[lifecycle.Event]
	// RPCs, when set, is told the duration and code of every RPC.
	RPCs RPCObserver
	Log  *slog.Logger
}

// RPCObserver records RPCs, e.g. as metrics. It must not block.
type RPCObserver interface {
	ObserveRPC(method, code string, d time.Duration)
}

// Server implements the CRI services. RPCs crib does not implement yet
// answer Unimplemented through the embedded types.
type Server struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	// info is fixed but for info.Handlers, which infoMu guards: a
	// configuration reload replaces them (SetHandlers).
	info        Info
	infoMu      sync.RWMutex
	sandboxes   *sandbox.Manager
	containers  *container.Manager
	checkpoints *checkpoint.Service
	images      *image.Store
	network     Network
	streams     Streams
	usage       *statsservice.Service
	rpcs        RPCObserver
	log         *slog.Logger
	// events is where the managers' lifecycle events arrive, nil when
	// the runtime offers none; pods is what GetContainerEvents describes
	// them with.
	events *lifecycle.Broadcaster[lifecycle.Event]
	pods   podSource
	// listEntries are the containers' encoded ListContainers entries.
	listEntries listEntryCache
}

// New returns a Server over cfg's parts; it does no I/O.
func New(cfg Config) *Server {
	return &Server{
		info:        cfg.Info,
		sandboxes:   cfg.Sandboxes,
		containers:  cfg.Containers,
		checkpoints: cfg.Checkpoints,
		images:      cfg.Images,
		network:     cfg.Network,
		streams:     cfg.Streams,
		usage:       cfg.Usage,
		events:      cfg.Events,
		rpcs:        cfg.RPCs,
		pods:        podSource{sandbox: cfg.Sandboxes.Get, sandboxes: cfg.Sandboxes.List, inSandbox: cfg.Containers.InSandbox},
		log:         cfg.Log,
	}
}

var (
	_ runtimeapi.RuntimeServiceServer = (*Server)(nil)
	_ runtimeapi.ImageServiceServer   = (*Server)(nil)
)
