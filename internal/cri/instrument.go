package cri

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Interceptor logs every RPC once (failures at error level, the rest at
// debug) and has it observed, turns error classes into gRPC codes and
// panics into Internal. The codes are errgrpc.ToGRPC's: the first errdefs
// class found walking the error's chain (context's deadline and
// cancellation included) gives the code, no class gives Unknown, and an
// error that already carries a status keeps it. The agent's CRI client
// reads them back with errgrpc.ToNative, the same table.
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
		err = errgrpc.ToGRPC(err)
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
		err = errgrpc.ToGRPC(err)
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

// invalid is a request error naming the field it is about.
func invalid(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, errdefs.ErrInvalidArgument)...)
}
