package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// eventWait bounds the wait for one event; it is generous, not a measure.
const eventWait = 30 * time.Second

// eventStream is one GetContainerEvents call whose responses arrive on a
// channel.
type eventStream struct {
	t      *testing.T
	c      chan *runtimeapi.ContainerEventResponse
	err    chan error
	cancel context.CancelFunc
}

// openEvents subscribes to the daemon's container events and returns once
// the subscription is in place (the stream's headers have arrived).
func (e *env) openEvents() *eventStream {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(cancel)
	stream, err := e.rt().GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		e.t.Fatalf("GetContainerEvents: %v", err)
	}
	if _, err := stream.Header(); err != nil {
		e.t.Fatalf("GetContainerEvents headers: %v", err)
	}
	s := &eventStream{t: e.t, c: make(chan *runtimeapi.ContainerEventResponse, 64), err: make(chan error, 1), cancel: cancel}
	go func() {
		for {
			ev, err := stream.Recv()
			if err != nil {
				s.err <- err
				return
			}
			s.c <- ev
		}
	}()
	return s
}

// next returns the next event and fails unless it is of type typ about id.
func (s *eventStream) next(typ runtimeapi.ContainerEventType, id string) *runtimeapi.ContainerEventResponse {
	s.t.Helper()
	select {
	case ev := <-s.c:
		if ev.ContainerEventType != typ || ev.ContainerId != id {
			s.t.Fatalf("event %s of %s, want %s of %s", ev.ContainerEventType, ev.ContainerId, typ, id)
		}
		return ev
	case err := <-s.err:
		s.t.Fatalf("event stream ended waiting for %s of %s: %v", typ, id, err)
	case <-time.After(eventWait):
		s.t.Fatalf("no %s event of %s within %s", typ, id, eventWait)
	}
	return nil
}

// statusOf is the status of container id in ev, or nil.
func statusOf(ev *runtimeapi.ContainerEventResponse, id string) *runtimeapi.ContainerStatus {
	for _, st := range ev.ContainersStatuses {
		if st.Id == id {
			return st
		}
	}
	return nil
}

func TestContainerEvents(t *testing.T) {
	e := newEnv(t)
	events := e.openEvents()
	pod := e.podConfig("events")
	podID := e.runPod(pod)

	var seen []*runtimeapi.ContainerEventResponse
	expect := func(typ runtimeapi.ContainerEventType, id string) *runtimeapi.ContainerEventResponse {
		t.Helper()
		ev := events.next(typ, id)
		if got := ev.GetPodSandboxStatus(); got.GetId() != podID || got.GetMetadata().GetUid() != pod.Metadata.Uid {
			t.Errorf("%s of %s: pod_sandbox_status id %q uid %q, want %q %q",
				typ, id, got.GetId(), got.GetMetadata().GetUid(), podID, pod.Metadata.Uid)
		}
		if ev.CreatedAt == 0 || (len(seen) > 0 && ev.CreatedAt < seen[len(seen)-1].CreatedAt) {
			t.Errorf("%s of %s: created_at %d after %d", typ, id, ev.CreatedAt, seen[len(seen)-1].CreatedAt)
		}
		seen = append(seen, ev)
		return ev
	}

	// The sandbox's own events name it as the container, as containerd's do.
	expect(runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, podID)
	ev := expect(runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, podID)
	if ev.PodSandboxStatus.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("sandbox started: state %s", ev.PodSandboxStatus.State)
	}

	ctrID := e.run(podID, pod, e.ctrConfig("brief", "sh", "-c", "sleep 1; exit 3"))
	ev = expect(runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, ctrID)
	if statusOf(ev, ctrID) == nil {
		t.Errorf("created: containers_statuses %v lack %s", ev.ContainersStatuses, ctrID)
	}
	expect(runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, ctrID)
	// The exit is noticed by the container's watcher, with no RPC running.
	ev = expect(runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, ctrID)
	st := statusOf(ev, ctrID)
	if st == nil || st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 3 || st.Reason != "Error" {
		t.Errorf("stopped: status of %s = %v, want exited with code 3", ctrID, st)
	}

	if _, err := e.rt().RemoveContainer(e.ctx(), &runtimeapi.RemoveContainerRequest{ContainerId: ctrID}); err != nil {
		t.Fatal(err)
	}
	ev = expect(runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, ctrID)
	if st := statusOf(ev, ctrID); st != nil {
		t.Errorf("deleted: containers_statuses still have %s: %v", ctrID, st)
	}

	if _, err := e.rt().StopPodSandbox(e.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatal(err)
	}
	ev = expect(runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, podID)
	if ev.PodSandboxStatus.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("sandbox stopped: state %s", ev.PodSandboxStatus.State)
	}
	if _, err := e.rt().RemovePodSandbox(e.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatal(err)
	}
	// The sandbox is gone, yet its deletion still names the pod: the
	// kubelet drops events without a sandbox status.
	expect(runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, podID)

	select {
	case ev := <-events.c:
		t.Errorf("unexpected event %s of %s", ev.ContainerEventType, ev.ContainerId)
	default:
	}
}

// TestContainerEventsFanOut checks that every subscriber gets every
// event, and that a stream ends, and the daemon stops promptly, when the
// daemon shuts down with streams open.
func TestContainerEventsFanOut(t *testing.T) {
	e := newEnv(t)
	streams := []*eventStream{e.openEvents(), e.openEvents(), e.openEvents()}
	pod := e.podConfig("fanout")
	podID := e.runPod(pod)
	for i, s := range streams {
		t.Run(fmt.Sprint("stream ", i), func(t *testing.T) {
			s.t = t
			s.next(runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, podID)
			s.next(runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, podID)
		})
	}
	// A caller that leaves does not disturb the others.
	streams[0].cancel()

	e.d.Restart(t)
	for i, s := range streams[1:] {
		select {
		case err := <-s.err:
			if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "shutting down") {
				t.Errorf("stream %d ended with %v, want Unavailable: shutting down", i+1, err)
			}
		case ev := <-s.c:
			t.Errorf("stream %d: unexpected event %s of %s", i+1, ev.ContainerEventType, ev.ContainerId)
		case <-time.After(eventWait):
			t.Errorf("stream %d still open after the daemon restarted", i+1)
		}
	}
}
