package integration

import (
	"context"
	"errors"
	"io"
	"sort"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// notBuilt are the CRI RPCs crib still answers Unimplemented, and why. The
// test fails when one of them starts answering, so the list only shrinks.
var notBuilt = map[string]string{}

// TestEveryRPCAnswers calls every method of cri-api's RuntimeService and
// ImageService, as its proto descriptor lists them, with an empty request:
// each must answer (an error that names what is missing is an answer)
// rather than be Unimplemented, but for the ones notBuilt names.
func TestEveryRPCAnswers(t *testing.T) {
	e := newEnv(t)
	conn, err := grpc.NewClient("unix://"+e.d.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, service := range []protoreflect.FullName{"runtime.v1.RuntimeService", "runtime.v1.ImageService"} {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(service)
		if err != nil {
			t.Fatalf("%s: %v", service, err)
		}
		methods := d.(protoreflect.ServiceDescriptor).Methods()
		for i := range methods.Len() {
			m := methods.Get(i)
			code := call(t, conn, service, m)
			why, pending := notBuilt[string(m.Name())]
			switch {
			case pending && code != codes.Unimplemented:
				t.Errorf("%s answers %s now: take it off notBuilt (%s)", m.Name(), code, why)
			case !pending && code == codes.Unimplemented:
				t.Errorf("%s is Unimplemented", m.Name())
			}
		}
	}
}

// call invokes m with an empty request and returns the status code it
// ended with (OK for a stream that ended cleanly). Streams that never end
// on their own (GetContainerEvents) end at a short deadline.
func call(t *testing.T, conn *grpc.ClientConn, service protoreflect.FullName, m protoreflect.MethodDescriptor) codes.Code {
	t.Helper()
	newMessage := func(d protoreflect.MessageDescriptor) proto.Message {
		mt, err := protoregistry.GlobalTypes.FindMessageByName(d.FullName())
		if err != nil {
			t.Fatalf("%s: %v", d.FullName(), err)
		}
		return mt.New().Interface()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	method := "/" + string(service) + "/" + string(m.Name())
	req, resp := newMessage(m.Input()), newMessage(m.Output())
	if !m.IsStreamingServer() {
		return status.Code(conn.Invoke(ctx, method, req, resp))
	}
	stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, method)
	if err != nil {
		return status.Code(err)
	}
	if err := stream.SendMsg(req); err != nil {
		return status.Code(err)
	}
	if err := stream.CloseSend(); err != nil {
		return status.Code(err)
	}
	for {
		if err := stream.RecvMsg(resp); err != nil {
			if errors.Is(err, io.EOF) {
				return codes.OK
			}
			return status.Code(err)
		}
	}
}

// TestStreamedListsMatchLists checks each Stream* list RPC (KEP-5825)
// against its List counterpart on the same pods, with and without a filter.
func TestStreamedListsMatchLists(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx()
	pod := e.podConfig("streams")
	podID := e.runPod(pod)
	other := e.podConfig("streams-other")
	otherID := e.runPod(other)
	running := e.run(podID, pod, e.ctrConfig("running", "sleep", "3600"))
	e.create(podID, pod, e.ctrConfig("created", "true"))
	e.run(otherID, other, e.ctrConfig("elsewhere", "sleep", "3600"))
	e.waitState(running, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)

	t.Run("containers", func(t *testing.T) {
		for _, f := range []*runtimeapi.ContainerFilter{nil, {PodSandboxId: podID}, {LabelSelector: map[string]string{"name": "created"}}} {
			list, err := e.rt().ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: f})
			if err != nil {
				t.Fatal(err)
			}
			stream, err := e.rt().StreamContainers(ctx, &runtimeapi.StreamContainersRequest{Filter: f})
			if err != nil {
				t.Fatal(err)
			}
			got := collect(t, stream.Recv, func(r *runtimeapi.StreamContainersResponse) []*runtimeapi.Container { return r.Containers })
			sameItems(t, f.String(), list.Containers, got, (*runtimeapi.Container).GetId)
		}
	})
	t.Run("sandboxes", func(t *testing.T) {
		for _, f := range []*runtimeapi.PodSandboxFilter{nil, {Id: otherID}} {
			list, err := e.rt().ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: f})
			if err != nil {
				t.Fatal(err)
			}
			stream, err := e.rt().StreamPodSandboxes(ctx, &runtimeapi.StreamPodSandboxesRequest{Filter: f})
			if err != nil {
				t.Fatal(err)
			}
			got := collect(t, stream.Recv, func(r *runtimeapi.StreamPodSandboxesResponse) []*runtimeapi.PodSandbox { return r.PodSandboxes })
			sameItems(t, f.String(), list.Items, got, (*runtimeapi.PodSandbox).GetId)
		}
	})
	t.Run("images", func(t *testing.T) {
		list, err := e.d.Images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		stream, err := e.d.Images.StreamImages(ctx, &runtimeapi.StreamImagesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		got := collect(t, stream.Recv, func(r *runtimeapi.StreamImagesResponse) []*runtimeapi.Image { return r.Images })
		if len(got) == 0 {
			t.Error("StreamImages sent no image; the test image is there")
		}
		sameItems(t, "", list.Images, got, (*runtimeapi.Image).GetId)
	})
	// Stats change between two readings: the same items, by id.
	t.Run("container stats", func(t *testing.T) {
		f := &runtimeapi.ContainerStatsFilter{PodSandboxId: podID}
		list, err := e.rt().ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		stream, err := e.rt().StreamContainerStats(ctx, &runtimeapi.StreamContainerStatsRequest{Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		var want, got []string
		for _, s := range list.Stats {
			want = append(want, s.GetAttributes().GetId())
		}
		for _, s := range collect(t, stream.Recv, func(r *runtimeapi.StreamContainerStatsResponse) []*runtimeapi.ContainerStats { return r.ContainerStats }) {
			got = append(got, s.GetAttributes().GetId())
		}
		sameIDs(t, "container stats", want, got, 2)
	})
	t.Run("pod stats", func(t *testing.T) {
		list, err := e.rt().ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		stream, err := e.rt().StreamPodSandboxStats(ctx, &runtimeapi.StreamPodSandboxStatsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var want, got []string
		for _, s := range list.Stats {
			want = append(want, s.GetAttributes().GetId())
		}
		for _, s := range collect(t, stream.Recv, func(r *runtimeapi.StreamPodSandboxStatsResponse) []*runtimeapi.PodSandboxStats {
			return r.PodSandboxStats
		}) {
			got = append(got, s.GetAttributes().GetId())
		}
		sameIDs(t, "pod stats", want, got, 2)
	})
}

// collect receives a stream's responses until it ends and returns their
// items, failing the test on an error.
func collect[R, T any](t *testing.T, recv func() (R, error), items func(R) []T) []T {
	t.Helper()
	var all []T
	for {
		resp, err := recv()
		if errors.Is(err, io.EOF) {
			return all
		}
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, items(resp)...)
	}
}

// sameItems fails unless got holds exactly want's messages, in any order.
func sameItems[T proto.Message](t *testing.T, what string, want, got []T, id func(T) string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: streamed %d items, listed %d", what, len(got), len(want))
		return
	}
	byID := func(s []T) { sort.Slice(s, func(i, j int) bool { return id(s[i]) < id(s[j]) }) }
	byID(want)
	byID(got)
	for i := range want {
		if !proto.Equal(want[i], got[i]) {
			t.Errorf("%s: streamed %v, listed %v", what, got[i], want[i])
		}
	}
}

// sameIDs fails unless got and want are the same n ids.
func sameIDs(t *testing.T, what string, want, got []string, n int) {
	t.Helper()
	sort.Strings(want)
	sort.Strings(got)
	if len(want) != n || len(got) != n {
		t.Errorf("%s: listed %v, streamed %v; want %d of each", what, want, got, n)
		return
	}
	for i := range want {
		if want[i] != got[i] {
			t.Errorf("%s: listed %v, streamed %v", what, want, got)
			return
		}
	}
}
