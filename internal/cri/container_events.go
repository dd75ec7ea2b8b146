package cri

import (
	"context"
	"errors"
	"fmt"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/lifecycle"
	"github.com/crib-dev/crib/internal/sandbox"
)

// GetContainerEvents streams the lifecycle events of containers and pod
// sandboxes from the moment of the call until the caller goes away. Each
// response carries the pod's sandbox status and the statuses of all its
// containers as they are when the response is built, which is at or after
// the event. A caller that reads too slowly to keep up loses its stream
// (ResourceExhausted) rather than hold the runtime up; it should subscribe
// again and relist. Shutdown ends every stream with Unavailable. The
// stream's headers are sent once the subscription is in place.
func (s *Server) GetContainerEvents(_ *runtimeapi.GetEventsRequest, stream runtimeapi.RuntimeService_GetContainerEventsServer) error {
	if s.events == nil {
		return fmt.Errorf("container events: %w", errdefs.ErrNotImplemented)
	}
	sub := s.events.Subscribe()
	defer sub.Close()
	// Headers go out now rather than with the first event: a caller that
	// waits for them (ClientStream.Header) knows that it misses nothing
	// from then on.
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return nil // the caller is gone
	}
	// Known sandboxes are read after subscribing, so that every sandbox
	// this stream may hear of is either known now or announced later.
	es := newEventStream(s.pods)
	return es.run(stream.Context(), sub, stream.Send)
}

// podSource is where responses are built from: the live sandbox and
// container managers, or fakes in tests.
type podSource struct {
	sandbox   func(id string) (sandbox.Sandbox, error)
	sandboxes func() []sandbox.Sandbox
	// inSandbox is a sandbox's containers, oldest first.
	inSandbox func(sandboxID string) []container.Container
}

// eventStream builds the responses of one GetContainerEvents call.
type eventStream struct {
	pods podSource
	// known is the last status of each sandbox this stream has seen, for
	// the events of a sandbox that is gone by the time they are sent (its
	// deletion, at least).
	known map[string]*runtimeapi.PodSandboxStatus
}

func newEventStream(pods podSource) *eventStream {
	es := &eventStream{pods: pods, known: map[string]*runtimeapi.PodSandboxStatus{}}
	for _, sb := range pods.sandboxes() {
		es.known[sb.ID] = sandboxStatus(sb)
	}
	return es
}

// run sends the subscription's events until ctx ends or the subscription
// does.
func (es *eventStream) run(ctx context.Context, sub *lifecycle.Subscription[lifecycle.Event], send func(*runtimeapi.ContainerEventResponse) error) error {
	for {
		select {
		case <-ctx.Done():
			// The caller went away: nothing to tell it.
			return nil
		case ev, ok := <-sub.C():
			if !ok {
				return subscriptionEnd(sub.Err())
			}
			resp := es.response(ev)
			if resp == nil {
				continue
			}
			if err := send(resp); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("send container event: %w", err)
			}
		}
	}
}

// subscriptionEnd is the error that ends a stream whose subscription ended
// for reason err.
func subscriptionEnd(err error) error {
	switch {
	case errors.Is(err, lifecycle.ErrOverflow):
		return fmt.Errorf("container events: %w: %w", err, errdefs.ErrResourceExhausted)
	case errors.Is(err, lifecycle.ErrClosed):
		return fmt.Errorf("container events: runtime is shutting down: %w", errdefs.ErrUnavailable)
	case err != nil:
		return fmt.Errorf("container events: %w", err)
	}
	return nil
}

// response builds the CRI message of ev, or nil for an event of a pod
// this stream cannot describe (one made and removed before the stream got
// to its first event).
func (es *eventStream) response(ev lifecycle.Event) *runtimeapi.ContainerEventResponse {
	sb := es.sandboxStatus(ev.SandboxID)
	if ev.IsSandbox() && ev.Kind == lifecycle.Deleted {
		delete(es.known, ev.SandboxID)
	}
	if sb == nil {
		return nil
	}
	resp := &runtimeapi.ContainerEventResponse{
		ContainerId:        ev.ID,
		ContainerEventType: eventType(ev.Kind),
		CreatedAt:          ev.At.UnixNano(),
		PodSandboxStatus:   sb,
	}
	// The pod's containers only: an event costs the pod, not the node.
	for _, c := range es.pods.inSandbox(ev.SandboxID) {
		resp.ContainersStatuses = append(resp.ContainersStatuses, containerStatus(c))
	}
	return resp
}

// sandboxStatus is the sandbox's status now, or the last one this stream
// saw, not ready, if it has been removed since.
func (es *eventStream) sandboxStatus(id string) *runtimeapi.PodSandboxStatus {
	if sb, err := es.pods.sandbox(id); err == nil {
		st := sandboxStatus(sb)
		es.known[id] = st
		return st
	}
	last, ok := es.known[id]
	if !ok {
		return nil
	}
	st := proto.Clone(last).(*runtimeapi.PodSandboxStatus)
	st.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	return st
}

func eventType(k lifecycle.Kind) runtimeapi.ContainerEventType {
	switch k {
	case lifecycle.Started:
		return runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT
	case lifecycle.Stopped:
		return runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT
	case lifecycle.Deleted:
		return runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT
	}
	return runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT
}
