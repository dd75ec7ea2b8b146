package cri

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Interceptor logs every RPC once (failures at error level, the rest at
// debug) and has it observed, turns error classes into gRPC codes and
// panics into Internal.
func (s *Server) Interceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("rpc panicked", "rpc", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
			resp, err = nil, status.Errorf(codes.Internal, "%s: internal error: %v", info.FullMethod, r)
		}
		s.observe(info.FullMethod, err, start)
	}()
	resp, err = handler(ctx, req)
	if err != nil {
		err = toStatus(err)
		s.log.Error("rpc failed", "rpc", info.FullMethod, "err", err, "duration", time.Since(start))
		return nil, err
	}
	s.log.Debug("rpc", "rpc", info.FullMethod, "duration", time.Since(start))
	return resp, nil
}

// StreamInterceptor is Interceptor for streaming RPCs: it logs each stream
// once when it ends, gives its error a gRPC code and turns a panic into
// Internal.
func (s *Server) StreamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("rpc panicked", "rpc", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
			err = status.Errorf(codes.Internal, "%s: internal error: %v", info.FullMethod, r)
		}
		s.observe(info.FullMethod, err, start)
	}()
	if err = handler(srv, ss); err != nil {
		err = toStatus(err)
		s.log.Error("rpc failed", "rpc", info.FullMethod, "err", err, "duration", time.Since(start))
		return err
	}
	s.log.Debug("rpc", "rpc", info.FullMethod, "duration", time.Since(start))
	return nil
}

// observe hands an RPC that began at start and ended with err (already
// given its gRPC code) to the observer: by method name without its
// service ("RunPodSandbox"), which is unique across the CRI's two
// services.
func (s *Server) observe(fullMethod string, err error, start time.Time) {
	if s.rpcs == nil {
		return
	}
	s.rpcs.ObserveRPC(fullMethod[strings.LastIndexByte(fullMethod, '/')+1:], status.Code(err).String(), time.Since(start))
}

// codeTable maps error classes to gRPC codes, first match wins.
var codeTable = []struct {
	is   func(error) bool
	code codes.Code
}{
	{errdefs.IsInvalidArgument, codes.InvalidArgument},
	{errdefs.IsNotFound, codes.NotFound},
	{errdefs.IsAlreadyExists, codes.AlreadyExists},
	{errdefs.IsFailedPrecondition, codes.FailedPrecondition},
	{errdefs.IsConflict, codes.FailedPrecondition},
	{errdefs.IsUnavailable, codes.Unavailable},
	{errdefs.IsNotImplemented, codes.Unimplemented},
	{errdefs.IsPermissionDenied, codes.PermissionDenied},
	{errdefs.IsUnauthorized, codes.Unauthenticated},
	{errdefs.IsResourceExhausted, codes.ResourceExhausted},
	{errdefs.IsOutOfRange, codes.OutOfRange},
	{errdefs.IsAborted, codes.Aborted},
	{errdefs.IsDeadlineExceeded, codes.DeadlineExceeded},
	{func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }, codes.DeadlineExceeded},
	{func(err error) bool { return errors.Is(err, context.Canceled) }, codes.Canceled},
}

// toStatus gives err its gRPC code; errors that already carry a status
// keep it.
func toStatus(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	for _, row := range codeTable {
		if row.is(err) {
			return status.Error(row.code, err.Error())
		}
	}
	return status.Error(codes.Unknown, err.Error())
}

// invalid is a request error naming the field it is about.
func invalid(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, errdefs.ErrInvalidArgument)...)
}
