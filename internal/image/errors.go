package image

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"

	"github.com/containerd/errdefs"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// classify wraps a registry or network error in an errdefs class, keeping
// the registry's own message.
func classify(err error) error {
	if err == nil || errdefs.IsNotFound(err) || errdefs.IsInvalidArgument(err) ||
		errdefs.IsUnauthorized(err) || errdefs.IsPermissionDenied(err) ||
		errdefs.IsUnavailable(err) || errdefs.IsResourceExhausted(err) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var terr *transport.Error
	if errors.As(err, &terr) {
		return fmt.Errorf("%w: %w", classOf(terr), err)
	}
	var nerr net.Error
	var uerr *url.Error
	var operr *net.OpError
	if errors.As(err, &nerr) || errors.As(err, &uerr) || errors.As(err, &operr) {
		return fmt.Errorf("%w: %w", errdefs.ErrUnavailable, err)
	}
	return err
}

func classOf(e *transport.Error) error {
	for _, d := range e.Errors {
		switch d.Code {
		case transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode, transport.BlobUnknownErrorCode:
			return errdefs.ErrNotFound
		case transport.UnauthorizedErrorCode:
			return errdefs.ErrUnauthenticated
		case transport.DeniedErrorCode:
			return errdefs.ErrPermissionDenied
		case transport.TooManyRequestsErrorCode:
			return errdefs.ErrResourceExhausted
		case transport.NameInvalidErrorCode, transport.TagInvalidErrorCode, transport.DigestInvalidErrorCode:
			return errdefs.ErrInvalidArgument
		}
	}
	switch {
	case e.StatusCode == http.StatusNotFound:
		return errdefs.ErrNotFound
	case e.StatusCode == http.StatusUnauthorized:
		return errdefs.ErrUnauthenticated
	case e.StatusCode == http.StatusForbidden:
		return errdefs.ErrPermissionDenied
	case e.StatusCode == http.StatusTooManyRequests:
		return errdefs.ErrResourceExhausted
	case e.StatusCode >= 500:
		return errdefs.ErrUnavailable
	}
	return errdefs.ErrUnknown
}
