package cri

import (
	"context"
	"errors"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crierrors "k8s.io/cri-api/pkg/errors"

	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/sigpolicy"
)

// PullImage pulls an image and returns its id.
func (s *Server) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, invalid("image.image is empty")
	}
	if err := checkImageSpec("image", req.GetImage()); err != nil {
		return nil, err
	}
	a := req.GetAuth()
	if err := checkAuth(a); err != nil {
		return nil, err
	}
	if err := s.checkImageHandler("image", req.GetImage()); err != nil {
		return nil, err
	}
	// sandbox_config is not checked: clients send partial ones (critest,
	// no metadata); only its namespace is read, which picks the signature
	// policy. A known runtime handler pulls into the one store.
	img, err := s.images.Pull(ctx, ref, image.Auth{
		Username:      a.GetUsername(),
		Password:      a.GetPassword(),
		Auth:          a.GetAuth(),
		IdentityToken: a.GetIdentityToken(),
		RegistryToken: a.GetRegistryToken(),
	}, image.WithNamespace(req.GetSandboxConfig().GetMetadata().GetNamespace()))
	if err != nil {
		return nil, pullError(err)
	}
	return &runtimeapi.PullImageResponse{ImageRef: img.ID}, nil
}

// pullError gives a failed pull the reason the kubelet looks for. The
// kubelet recognises an unreachable registry only by a status message that
// starts with "RegistryUnavailable" and it strips the "rpc error" prefix
// only from codes.Unknown statuses, so such errors travel as Unknown with
// that prefix. In-process callers still see both the CRI reason and the
// errdefs class through errors.Is. Every other error keeps its class and
// so its code (errgrpc.ToGRPC, in the interceptors).
func pullError(err error) error {
	var refused *sigpolicy.RefusedError
	if errors.As(err, &refused) {
		return &signatureRefusedError{err: refused}
	}
	if errdefs.IsUnavailable(err) && !errors.Is(err, crierrors.ErrRegistryUnavailable) {
		return &registryUnavailableError{err: err}
	}
	return err
}

type registryUnavailableError struct{ err error }

func (e *registryUnavailableError) Error() string {
	return crierrors.ErrRegistryUnavailable.Error() + ": " + e.err.Error()
}

func (e *registryUnavailableError) Unwrap() []error {
	return []error{crierrors.ErrRegistryUnavailable, e.err}
}

// GRPCStatus is what grpc sends for this error (see pullError).
func (e *registryUnavailableError) GRPCStatus() *status.Status {
	return status.New(codes.Unknown, e.Error())
}

// signatureRefusedError is a pull the signature policy refused. The kubelet
// reports SignatureValidationFailed for a status message that starts with
// it, which it sees only on an Unknown status (see pullError); the message
// is the refusal's own, which starts so, without the "pull image" context.
type signatureRefusedError struct{ err *sigpolicy.RefusedError }

func (e *signatureRefusedError) Error() string { return e.err.Error() }

func (e *signatureRefusedError) Unwrap() error { return e.err }

// GRPCStatus is what grpc sends for this error (see pullError).
func (e *signatureRefusedError) GRPCStatus() *status.Status {
	return status.New(codes.Unknown, e.Error())
}
