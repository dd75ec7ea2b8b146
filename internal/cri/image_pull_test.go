package cri

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	crierrors "k8s.io/cri-api/pkg/errors"
)

// stalled is an error of errdefs' deadline-exceeded class, like the image
// store's abandoned downloads.
type stalled struct{}

func (stalled) Error() string     { return "download stalled: no progress for 5m0s" }
func (stalled) DeadlineExceeded() {}

func TestPullErrorReasons(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantCode   codes.Code
		wantPrefix string
		wantReason bool
	}{
		{
			name:       "registry unreachable",
			err:        fmt.Errorf("pull image 127.0.0.1:1/a:1: %w: dial tcp 127.0.0.1:1: connection refused", errdefs.ErrUnavailable),
			wantCode:   codes.Unknown,
			wantPrefix: "RegistryUnavailable: pull image 127.0.0.1:1/a:1: ",
			wantReason: true,
		},
		{
			name:       "not found",
			err:        fmt.Errorf("pull image a:1: %w", errdefs.ErrNotFound),
			wantCode:   codes.NotFound,
			wantPrefix: "pull image a:1",
		},
		{
			name:       "unauthorized",
			err:        fmt.Errorf("pull image a:1: %w", errdefs.ErrUnauthenticated),
			wantCode:   codes.Unauthenticated,
			wantPrefix: "pull image a:1",
		},
		{
			name:       "stalled download",
			err:        fmt.Errorf("pull image a:1: fetch layer sha256:ab: %w", stalled{}),
			wantCode:   codes.DeadlineExceeded,
			wantPrefix: "pull image a:1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := pullError(tt.err)
			if got := errors.Is(err, crierrors.ErrRegistryUnavailable); got != tt.wantReason {
				t.Errorf("errors.Is(RegistryUnavailable) = %v, want %v", got, tt.wantReason)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("pullError lost the original error chain: %v", err)
			}
			st, _ := status.FromError(errgrpc.ToGRPC(err))
			if st.Code() != tt.wantCode {
				t.Errorf("code = %v, want %v", st.Code(), tt.wantCode)
			}
			if !strings.HasPrefix(st.Message(), tt.wantPrefix) {
				t.Errorf("message %q does not start with %q", st.Message(), tt.wantPrefix)
			}
		})
	}
	// The class survives for in-process callers.
	if err := pullError(fmt.Errorf("x: %w", errdefs.ErrUnavailable)); !errdefs.IsUnavailable(err) {
		t.Errorf("registry unreachable error lost its errdefs class: %v", err)
	}
}
