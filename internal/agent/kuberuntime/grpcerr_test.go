package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A runtime's gRPC code becomes the errdefs class callers test for, the
// runtime's message leads (without grpc's "rpc error" prefix), and the
// class crib's own CRI edge sent comes back.
func TestFromGRPC(t *testing.T) {
	tests := []struct {
		code codes.Code
		is   func(error) bool
	}{
		{codes.NotFound, errdefs.IsNotFound},
		{codes.InvalidArgument, errdefs.IsInvalidArgument},
		{codes.AlreadyExists, errdefs.IsAlreadyExists},
		{codes.FailedPrecondition, errdefs.IsFailedPrecondition},
		{codes.Unavailable, errdefs.IsUnavailable},
		{codes.Unimplemented, errdefs.IsNotImplemented},
		{codes.PermissionDenied, errdefs.IsPermissionDenied},
		{codes.Unauthenticated, errdefs.IsUnauthorized},
		{codes.ResourceExhausted, errdefs.IsResourceExhausted},
		{codes.OutOfRange, errdefs.IsOutOfRange},
		{codes.Aborted, errdefs.IsAborted},
		{codes.Internal, errdefs.IsInternal},
		{codes.DataLoss, errdefs.IsDataLoss},
		{codes.Unknown, errdefs.IsUnknown},
		{codes.DeadlineExceeded, func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
		{codes.Canceled, func(err error) bool { return errors.Is(err, context.Canceled) }},
	}
	for _, tt := range tests {
		t.Run(tt.code.String(), func(t *testing.T) {
			err := fromGRPC(status.Error(tt.code, "container abc is busy"))
			if !tt.is(err) {
				t.Errorf("fromGRPC(%v) = %v: not of its class", tt.code, err)
			}
			// Context's classes cannot take a message, so theirs is appended.
			if got := err.Error(); !strings.HasPrefix(got, "container abc is busy") || strings.Contains(got, "rpc error") {
				t.Errorf("message = %q, want the runtime's", got)
			}
		})
	}
	t.Run("round trip through crib's edge", func(t *testing.T) {
		for _, class := range []error{errdefs.ErrNotFound, errdefs.ErrInvalidArgument, errdefs.ErrAlreadyExists,
			errdefs.ErrFailedPrecondition, errdefs.ErrUnavailable, errdefs.ErrResourceExhausted} {
			sent := fmt.Errorf("sandbox abc: %w", class)
			got := fromGRPC(errgrpc.ToGRPC(sent))
			if !errors.Is(got, class) || got.Error() != sent.Error() {
				t.Errorf("%v came back as %v", sent, got)
			}
		}
	})
	t.Run("not a status", func(t *testing.T) {
		own := fmt.Errorf("dial: %w", context.Canceled)
		if got := fromGRPC(own); got != own {
			t.Errorf("fromGRPC(%v) = %v, want it unchanged", own, got)
		}
		if fromGRPC(nil) != nil {
			t.Error("fromGRPC(nil) is not nil")
		}
	})
}
