package agent

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
)

// eventRetry is how long the agent waits before it subscribes again to a
// runtime's event stream that broke.
const eventRetry = time.Second

// watchEvents syncs a pod as soon as the runtime reports a change to one
// of its containers, when the runtime offers GetContainerEvents; the
// relist stays as the safety net, and is all there is on runtimes without
// events.
func (a *Agent) watchEvents(ctx context.Context) {
	for ctx.Err() == nil {
		events := make(chan *runtimeapi.ContainerEventResponse, 128)
		errc := make(chan error, 1)
		streamCtx, cancel := context.WithCancel(ctx)
		go func() { errc <- a.cfg.Runtime.GetContainerEvents(streamCtx, events, nil) }()
		err := a.forwardEvents(streamCtx, events, errc)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if status.Code(err) == codes.Unimplemented {
			a.log.Info("runtime offers no container events; relisting only", "interval", a.cfg.RelistInterval)
			return
		}
		a.log.Debug("container event stream ended; subscribing again", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-a.cfg.Clock.After(eventRetry):
		}
	}
}

func (a *Agent) forwardEvents(ctx context.Context, events <-chan *runtimeapi.ContainerEventResponse, errc <-chan error) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errc:
			return err
		case ev := <-events:
			sb := ev.GetPodSandboxStatus()
			if sb.GetLabels()[labels.ManagedBy] != a.cfg.PodConfig.OwnerLabel() {
				continue
			}
			if uid := sb.GetLabels()[labels.PodUID]; uid != "" {
				a.workers.Sync(uid)
			}
		}
	}
}
