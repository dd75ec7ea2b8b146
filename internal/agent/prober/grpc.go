package prober

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
)

// grpcProbe calls grpc.health.v1.Health/Check on the pod IP without TLS; the
// probe passes when the service answers SERVING.
func (h *handlers) grpcProbe(ctx context.Context, a *corev1.GRPCAction, t target, timeout time.Duration) (Result, string) {
	if a.Port <= 0 || a.Port > 65535 {
		return Failure, fmt.Sprintf("grpc probe: port %d is out of range", a.Port)
	}
	addr := net.JoinHostPort(hostOrPodIP("", t.podIP), strconv.Itoa(int(a.Port)))
	dial := h.dialer()
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent(h.userAgent),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return dial(ctx, "tcp", a)
		}),
	)
	if err != nil {
		return Failure, fmt.Sprintf("grpc probe %s: %v", addr, err)
	}
	defer conn.Close()

	service := ""
	if a.Service != nil {
		service = *a.Service
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		switch status.Code(err) {
		case codes.Unimplemented:
			return Failure, fmt.Sprintf("grpc probe %s: the server does not implement grpc.health.v1.Health: %v", addr, err)
		case codes.DeadlineExceeded:
			return Failure, fmt.Sprintf("grpc probe %s: no health answer within %s", addr, timeout)
		}
		return Failure, fmt.Sprintf("grpc probe %s: %v", addr, err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return Failure, fmt.Sprintf("grpc probe %s: service %q is %s", addr, service, resp.GetStatus())
	}
	return Success, ""
}
