package cri

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/lifecycle"
	"github.com/crib-dev/crib/internal/sandbox"
)

// fakePods is a podSource over in-memory sandboxes and containers that
// tests change as they go.
type fakePods struct {
	mu         sync.Mutex
	sandboxes  map[string]sandbox.Sandbox
	containers []container.Container
}

func newFakePods(sbs ...sandbox.Sandbox) *fakePods {
	f := &fakePods{sandboxes: map[string]sandbox.Sandbox{}}
	for _, sb := range sbs {
		f.sandboxes[sb.ID] = sb
	}
	return f
}

func (f *fakePods) source() podSource {
	return podSource{
		sandbox: func(id string) (sandbox.Sandbox, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			sb, ok := f.sandboxes[id]
			if !ok {
				return sandbox.Sandbox{}, fmt.Errorf("sandbox %s: %w", id, errdefs.ErrNotFound)
			}
			return sb, nil
		},
		sandboxes: func() []sandbox.Sandbox {
			f.mu.Lock()
			defer f.mu.Unlock()
			var out []sandbox.Sandbox
			for _, sb := range f.sandboxes {
				out = append(out, sb)
			}
			return out
		},
		inSandbox: func(sandboxID string) []container.Container {
			f.mu.Lock()
			defer f.mu.Unlock()
			var out []container.Container
			for _, c := range f.containers {
				if c.SandboxID == sandboxID {
					out = append(out, c)
				}
			}
			return out
		},
	}
}

func (f *fakePods) removeSandbox(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.sandboxes, id)
}

func testSandbox(id, name string) sandbox.Sandbox {
	return sandbox.Sandbox{
		ID:        id,
		State:     sandbox.Ready,
		CreatedAt: time.Unix(100, 0),
		Config: &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "ns", Uid: "uid-" + name},
			Labels:   map[string]string{"app": name},
		},
		IPs: []string{"10.88.0.7"},
	}
}

func testContainer(id, sandboxID string, st container.State, exit int32) container.Container {
	return container.Container{
		ID:        id,
		SandboxID: sandboxID,
		State:     st,
		ExitCode:  exit,
		CreatedAt: time.Unix(200, 0),
		Config:    &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c-" + id}},
	}
}

// summary is the part of a response the tests compare.
type summary struct {
	ID        string
	Type      runtimeapi.ContainerEventType
	CreatedAt int64
	PodUID    string
	PodState  runtimeapi.PodSandboxState
	PodIP     string
	// Containers are "id state exit-code" of each container status.
	Containers []string
}

func summarize(r *runtimeapi.ContainerEventResponse) *summary {
	if r == nil {
		return nil
	}
	s := &summary{
		ID:        r.ContainerId,
		Type:      r.ContainerEventType,
		CreatedAt: r.CreatedAt,
		PodUID:    r.GetPodSandboxStatus().GetMetadata().GetUid(),
		PodState:  r.GetPodSandboxStatus().GetState(),
		PodIP:     r.GetPodSandboxStatus().GetNetwork().GetIp(),
	}
	for _, c := range r.ContainersStatuses {
		s.Containers = append(s.Containers, fmt.Sprintf("%s %s %d", c.Id, c.State, c.ExitCode))
	}
	return s
}

func TestEventResponse(t *testing.T) {
	at := time.Unix(300, 42)
	pods := newFakePods(testSandbox("sb1", "web"), testSandbox("sb2", "db"))
	pods.containers = []container.Container{
		testContainer("c1", "sb1", container.Running, 0),
		testContainer("c2", "sb1", container.Exited, 3),
		testContainer("c3", "sb2", container.Running, 0),
	}
	for _, tt := range []struct {
		name string
		ev   lifecycle.Event
		want *summary
	}{{
		name: "container stopped carries the pod's containers only",
		ev:   lifecycle.Event{Kind: lifecycle.Stopped, ID: "c2", SandboxID: "sb1", At: at},
		want: &summary{
			ID: "c2", Type: runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, CreatedAt: at.UnixNano(),
			PodUID: "uid-web", PodState: runtimeapi.PodSandboxState_SANDBOX_READY, PodIP: "10.88.0.7",
			Containers: []string{"c1 CONTAINER_RUNNING 0", "c2 CONTAINER_EXITED 3"},
		},
	}, {
		name: "sandbox started names the sandbox as the container",
		ev:   lifecycle.Event{Kind: lifecycle.Started, ID: "sb2", SandboxID: "sb2", At: at},
		want: &summary{
			ID: "sb2", Type: runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, CreatedAt: at.UnixNano(),
			PodUID: "uid-db", PodState: runtimeapi.PodSandboxState_SANDBOX_READY, PodIP: "10.88.0.7",
			Containers: []string{"c3 CONTAINER_RUNNING 0"},
		},
	}, {
		name: "created",
		ev:   lifecycle.Event{Kind: lifecycle.Created, ID: "c3", SandboxID: "sb2", At: at},
		want: &summary{
			ID: "c3", Type: runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, CreatedAt: at.UnixNano(),
			PodUID: "uid-db", PodState: runtimeapi.PodSandboxState_SANDBOX_READY, PodIP: "10.88.0.7",
			Containers: []string{"c3 CONTAINER_RUNNING 0"},
		},
	}, {
		name: "a pod the stream never knew is left out",
		ev:   lifecycle.Event{Kind: lifecycle.Deleted, ID: "c9", SandboxID: "sb9", At: at},
		want: nil,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			es := newEventStream(pods.source())
			if diff := cmp.Diff(tt.want, summarize(es.response(tt.ev))); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeletedSandboxKeepsItsLastStatus checks that the deletion of a
// sandbox, which is gone from the manager when the event is sent, still
// names the pod: the kubelet drops events without a sandbox status.
func TestDeletedSandboxKeepsItsLastStatus(t *testing.T) {
	pods := newFakePods(testSandbox("sb1", "web"))
	es := newEventStream(pods.source())
	pods.removeSandbox("sb1")
	at := time.Unix(400, 0)
	got := summarize(es.response(lifecycle.Event{Kind: lifecycle.Deleted, ID: "sb1", SandboxID: "sb1", At: at}))
	want := &summary{
		ID: "sb1", Type: runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, CreatedAt: at.UnixNano(),
		PodUID: "uid-web", PodState: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, PodIP: "10.88.0.7",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if len(es.known) != 0 {
		t.Errorf("stream still remembers %d sandboxes after their deletion", len(es.known))
	}
}

// fakeEventsServer is the server side of one GetContainerEvents stream.
type fakeEventsServer struct {
	grpc.ServerStream
	ctx  context.Context
	sent chan *runtimeapi.ContainerEventResponse
	// entered, if set, gets the container id of each Send as it starts.
	entered chan string
}

func (f *fakeEventsServer) Context() context.Context { return f.ctx }

func (f *fakeEventsServer) SendHeader(metadata.MD) error { return nil }

func (f *fakeEventsServer) Send(r *runtimeapi.ContainerEventResponse) error {
	if f.entered != nil {
		f.entered <- r.ContainerId
	}
	select {
	case f.sent <- r:
		return nil
	case <-f.ctx.Done():
		return f.ctx.Err()
	}
}

func testServer(b *lifecycle.Broadcaster[lifecycle.Event], pods *fakePods) *Server {
	return &Server{events: b, pods: pods.source(), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// waitSubscribers waits until b has n subscribers: the stream subscribes
// on its own goroutine.
func waitSubscribers(t *testing.T, b *lifecycle.Broadcaster[lifecycle.Event], n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for b.Subscribers() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscribers, want %d", b.Subscribers(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestGetContainerEventsStreamsUntilCallerLeaves(t *testing.T) {
	b := lifecycle.NewBroadcaster[lifecycle.Event](16)
	defer b.Close()
	pods := newFakePods(testSandbox("sb1", "web"))
	pods.containers = []container.Container{testContainer("c1", "sb1", container.Exited, 7)}
	s := testServer(b, pods)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := &fakeEventsServer{ctx: ctx, sent: make(chan *runtimeapi.ContainerEventResponse)}
	errc := make(chan error, 1)
	go func() { errc <- s.GetContainerEvents(&runtimeapi.GetEventsRequest{}, stream) }()
	waitSubscribers(t, b, 1)

	b.Publish(lifecycle.Event{Kind: lifecycle.Started, ID: "c1", SandboxID: "sb1", At: time.Unix(1, 0)})
	b.Publish(lifecycle.Event{Kind: lifecycle.Stopped, ID: "c1", SandboxID: "sb1", At: time.Unix(2, 0)})
	var got []runtimeapi.ContainerEventType
	for i := 0; i < 2; i++ {
		r := <-stream.sent
		if r.ContainerId != "c1" || len(r.ContainersStatuses) != 1 || r.ContainersStatuses[0].ExitCode != 7 {
			t.Errorf("response %d = %v", i, r)
		}
		got = append(got, r.ContainerEventType)
	}
	want := []runtimeapi.ContainerEventType{
		runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT,
		runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("event types (-want +got):\n%s", diff)
	}

	cancel()
	if err := <-errc; err != nil {
		t.Errorf("GetContainerEvents after the caller left = %v, want nil", err)
	}
	if n := b.Subscribers(); n != 0 {
		t.Errorf("%d subscribers left after the stream ended", n)
	}
}

func TestGetContainerEventsEnds(t *testing.T) {
	for _, tt := range []struct {
		name string
		// end makes the stream's subscription end while the stream is
		// blocked sending the first of them.
		end  func(b *lifecycle.Broadcaster[lifecycle.Event])
		sent int
		want codes.Code
	}{{
		name: "slow reader",
		end: func(b *lifecycle.Broadcaster[lifecycle.Event]) {
			// One is being sent, two fill the buffer, the fourth
			// overflows it.
			for i := 0; i < 4; i++ {
				b.Publish(lifecycle.Event{Kind: lifecycle.Created, ID: fmt.Sprint("c", i), SandboxID: "sb1"})
			}
		},
		sent: 2,
		want: codes.ResourceExhausted,
	}, {
		name: "shutdown",
		end: func(b *lifecycle.Broadcaster[lifecycle.Event]) {
			b.Publish(lifecycle.Event{Kind: lifecycle.Created, ID: "c0", SandboxID: "sb1"})
			b.Close()
		},
		sent: 1,
		want: codes.Unavailable,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			b := lifecycle.NewBroadcaster[lifecycle.Event](2)
			defer b.Close()
			s := testServer(b, newFakePods(testSandbox("sb1", "web")))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stream := &fakeEventsServer{
				ctx: ctx, sent: make(chan *runtimeapi.ContainerEventResponse), entered: make(chan string, 16),
			}
			errc := make(chan error, 1)
			go func() { errc <- s.GetContainerEvents(&runtimeapi.GetEventsRequest{}, stream) }()
			waitSubscribers(t, b, 1)
			b.Publish(lifecycle.Event{Kind: lifecycle.Created, ID: "first", SandboxID: "sb1"})
			// Once the stream is sending "first", it has taken it out
			// of its buffer, and is stuck until the test reads it.
			if id := <-stream.entered; id != "first" {
				t.Fatalf("first Send of %q, want first", id)
			}
			tt.end(b)
			var ids []string
			var err error
		read:
			for {
				select {
				case r := <-stream.sent:
					ids = append(ids, r.ContainerId)
				case err = <-errc:
					break read
				}
			}
			if got := status.Code(errgrpc.ToGRPC(err)); got != tt.want {
				t.Errorf("error = %v (%s), want %s", err, got, tt.want)
			}
			if len(ids) != tt.sent+1 {
				t.Errorf("sent %v, want %d events", ids, tt.sent+1)
			}
			if n := b.Subscribers(); n != 0 {
				t.Errorf("%d subscribers left", n)
			}
		})
	}
}

func TestGetContainerEventsWithoutBroadcaster(t *testing.T) {
	s := testServer(nil, newFakePods())
	stream := &fakeEventsServer{ctx: context.Background()}
	err := s.GetContainerEvents(&runtimeapi.GetEventsRequest{}, stream)
	if got := status.Code(errgrpc.ToGRPC(err)); got != codes.Unimplemented {
		t.Errorf("error = %v, want Unimplemented", err)
	}
}
