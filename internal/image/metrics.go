package image

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/containerd/errdefs"
)

// PullRecorder is told about pulls, e.g. to keep metrics. Its methods
// must not block.
type PullRecorder interface {
	// PullStarted is called when a pull begins, PullFinished when it
	// ends, with the reason it failed (FailureReason) or "".
	PullStarted()
	PullFinished(d time.Duration, reason string)
	// PullBytes counts bytes of layer blobs as they arrive.
	PullBytes(n int)
}

// FailureReason sorts a pull's error into a small fixed set of reasons:
// not_found, unauthorized, network, invalid, canceled, other; "" for nil.
func FailureReason(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	case errdefs.IsNotFound(err):
		return "not_found"
	case errdefs.IsUnauthorized(err) || errdefs.IsPermissionDenied(err):
		return "unauthorized"
	case errdefs.IsInvalidArgument(err):
		return "invalid"
	case errdefs.IsUnavailable(err) || errdefs.IsDeadlineExceeded(err):
		// Unreachable registries and stalled downloads.
		return "network"
	}
	return "other"
}

// recordPull tells the recorder, if any, that a pull begins, and returns
// what tells it the pull ended with *err.
func (s *Store) recordPull() func(err *error) {
	rec := s.cfg.Pulls
	if rec == nil {
		return func(*error) {}
	}
	began := time.Now()
	rec.PullStarted()
	return func(err *error) { rec.PullFinished(time.Since(began), FailureReason(*err)) }
}

// countBytes has rec count what is read from rc.
func countBytes(rc io.ReadCloser, rec PullRecorder) io.ReadCloser {
	if rec == nil {
		return rc
	}
	return &byteCounter{ReadCloser: rc, rec: rec}
}

type byteCounter struct {
	io.ReadCloser
	rec PullRecorder
}

func (b *byteCounter) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.rec.PullBytes(n)
	return n, err
}
