package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"

	"github.com/crib-dev/crib/internal/agent"
	"github.com/crib-dev/crib/internal/api"
	"github.com/crib-dev/crib/internal/config"
	"github.com/crib-dev/crib/internal/daemon"
)

// criTimeout bounds each CRI call the agent makes; image pulls get the
// runtime's own progress timeout on top.
const criTimeout = 4 * time.Minute

// runtimeClient is the agent's way to a CRI runtime.
type runtimeClient struct {
	Runtime internalapi.RuntimeService
	Images  internalapi.ImageManagerService
	// PullProgress asks crib's local API about pulls in flight; nil when
	// the runtime is not known to be crib (--runtime-endpoint).
	PullProgress agent.PullProgress
	// Done is closed when an in-process runtime has stopped; Err then says
	// why.
	Done <-chan struct{}
	Err  func() error
}

// connectRuntime dials endpoint, or, when it is empty, starts crib's own
// runtime inside this process on cfg and dials that.
func connectRuntime(ctx context.Context, cfg config.Config, endpoint string, log *slog.Logger) (*runtimeClient, error) {
	done := make(chan struct{})
	var runErr error
	rc := &runtimeClient{Done: done, Err: func() error { return runErr }}
	if endpoint == "" && socketAnswers(cfg.Socket) {
		// A crib daemon already serves this configuration: share it
		// rather than fight it for its state.
		log.Info("using the crib daemon already running", "socket", cfg.Socket)
		endpoint = cfg.Socket
		rc.PullProgress = cribPullProgress{client: api.NewClient(filepath.Join(cfg.State, api.SocketName))}
	}
	if endpoint != "" {
		close(done) // no runtime of ours to wait for
	} else {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find own binary: %w", err)
		}
		d, err := daemon.New(ctx, cfg, monitorBinary(self, log), log)
		if err != nil {
			return nil, fmt.Errorf("start crib runtime: %w", err)
		}
		go func() {
			defer close(done)
			runErr = d.Run(ctx)
			shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), daemon.ShutdownGrace)
			defer cancel()
			runErr = errors.Join(runErr, d.Shutdown(shutdownCtx))
		}()
		select {
		case <-d.Ready():
		case <-done:
			return nil, fmt.Errorf("start crib runtime: %w", runErr)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		endpoint = "unix://" + cfg.Socket
		rc.PullProgress = cribPullProgress{client: api.NewClient(filepath.Join(cfg.State, api.SocketName))}
	}
	if !strings.Contains(endpoint, "://") {
		endpoint = "unix://" + endpoint
	}
	rt, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(criTimeout).Build(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to runtime %s: %w", endpoint, err)
	}
	img, err := remote.NewRemoteImageServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(criTimeout).Build(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to image service %s: %w", endpoint, err)
	}
	rc.Runtime, rc.Images = rt, img
	return rc, nil
}

// hostIPs are the node's addresses as the downward API's status.hostIPs
// gives them: global unicast addresses, IPv4 first.
func hostIPs() []string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var v4, v6 []string
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || !n.IP.IsGlobalUnicast() {
			continue
		}
		if n.IP.To4() != nil {
			v4 = append(v4, n.IP.String())
		} else {
			v6 = append(v6, n.IP.String())
		}
	}
	return append(v4, v6...)
}

// socketAnswers reports whether something accepts connections on a unix
// socket.
func socketAnswers(path string) bool {
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}
