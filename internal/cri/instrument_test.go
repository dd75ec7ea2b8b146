package cri

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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

// deadline is an error of the deadline class by interface, as a stalled
// download is.
type deadline struct{}

func (deadline) Error() string     { return "no progress" }
func (deadline) DeadlineExceeded() {}

// Every errdefs class crib's managers return travels as the gRPC code crib
// has always answered with; the message is the error's own.
func TestErrorCodes(t *testing.T) {
	tests := []struct {
		err  error
		want codes.Code
	}{
		{errdefs.ErrInvalidArgument, codes.InvalidArgument},
		{errdefs.ErrNotFound, codes.NotFound},
		{errdefs.ErrAlreadyExists, codes.AlreadyExists},
		{errdefs.ErrFailedPrecondition, codes.FailedPrecondition},
		{errdefs.ErrConflict, codes.FailedPrecondition},
		{errdefs.ErrUnavailable, codes.Unavailable},
		{errdefs.ErrNotImplemented, codes.Unimplemented},
		{errdefs.ErrPermissionDenied, codes.PermissionDenied},
		{errdefs.ErrUnauthenticated, codes.Unauthenticated},
		{errdefs.ErrResourceExhausted, codes.ResourceExhausted},
		{errdefs.ErrOutOfRange, codes.OutOfRange},
		{errdefs.ErrAborted, codes.Aborted},
		{deadline{}, codes.DeadlineExceeded},
		{context.DeadlineExceeded, codes.DeadlineExceeded},
		{context.Canceled, codes.Canceled},
		{errors.New("no class"), codes.Unknown},
		{status.Error(codes.Aborted, "already a status"), codes.Aborted},
	}
	for _, tt := range tests {
		err := fmt.Errorf("container abc: %w", tt.err)
		t.Run(tt.want.String()+"/"+tt.err.Error(), func(t *testing.T) {
			st, ok := status.FromError(errgrpc.ToGRPC(err))
			if !ok {
				t.Fatalf("ToGRPC(%v) carries no status", err)
			}
			if st.Code() != tt.want {
				t.Errorf("code = %v, want %v", st.Code(), tt.want)
			}
			if _, isStatus := status.FromError(tt.err); !isStatus && st.Message() != err.Error() {
				t.Errorf("message = %q, want %q", st.Message(), err.Error())
			}
		})
	}
}
