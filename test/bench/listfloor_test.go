package bench

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// listFloor is a gRPC server with nothing behind it: its ListContainers
// answers with bytes encoded once. Listing from it measures what every
// runtime's answer costs whoever serves it (gRPC over a unix socket and
// the client's decoding), the floor of ListContainers at that size. It
// serves from the benchmark's own process, so its answers wake no other
// process: a runtime, a process apart, cannot quite reach it.
type listFloor struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	encoded []byte
}

func (f *listFloor) ListContainers(context.Context, *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	resp := &runtimeapi.ListContainersResponse{}
	resp.ProtoReflect().SetUnknown(f.encoded)
	return resp, nil
}

// serveListFloor serves resp, as encoded bytes, on a unix socket with
// gRPC's default settings, and returns a client of it. Both go at the
// benchmark's end.
func serveListFloor(b *testing.B, resp *runtimeapi.ListContainersResponse) runtimeapi.RuntimeServiceClient {
	b.Helper()
	encoded, err := proto.Marshal(resp)
	if err != nil {
		b.Fatal(err)
	}
	sock := filepath.Join(b.TempDir(), "floor.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, &listFloor{encoded: encoded})
	go srv.Serve(lis)
	b.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(32<<20)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return runtimeapi.NewRuntimeServiceClient(conn)
}
