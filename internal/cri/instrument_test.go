package cri

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
)

type observed struct{ method, code string }

type fakeObserver []observed

func (f *fakeObserver) ObserveRPC(method, code string, d time.Duration) {
	if d < 0 {
		panic("negative duration")
	}
	*f = append(*f, observed{method, code})
}

// Every RPC is observed once, by method name and the gRPC code the
// caller sees, panics and streams included.
func TestInterceptorsObserve(t *testing.T) {
	var obs fakeObserver
	s := &Server{rpcs: &obs, log: slog.New(slog.DiscardHandler)}
	unary := func(method string, h grpc.UnaryHandler) {
		_, _ = s.Interceptor(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: method}, h)
	}
	unary("/runtime.v1.RuntimeService/Version", func(context.Context, any) (any, error) { return "ok", nil })
	unary("/runtime.v1.ImageService/PullImage", func(context.Context, any) (any, error) {
		return nil, fmt.Errorf("pull: %w", errdefs.ErrNotFound)
	})
	unary("/runtime.v1.RuntimeService/StartContainer", func(context.Context, any) (any, error) { panic("boom") })
	_ = s.StreamInterceptor(nil, nil, &grpc.StreamServerInfo{FullMethod: "/runtime.v1.RuntimeService/GetContainerEvents"},
		func(any, grpc.ServerStream) error { return context.Canceled })

	want := fakeObserver{
		{"Version", "OK"},
		{"PullImage", "NotFound"},
		{"StartContainer", "Internal"},
		{"GetContainerEvents", "Canceled"},
	}
	if diff := cmp.Diff(want, obs, cmp.AllowUnexported(observed{})); diff != "" {
		t.Errorf("observed (-want +got):\n%s", diff)
	}

	// Without an observer, nothing is observed and nothing breaks.
	s.rpcs = nil
	unary("/runtime.v1.RuntimeService/Version", func(context.Context, any) (any, error) { return "ok", nil })
}
