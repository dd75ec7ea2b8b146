package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// DefaultPullProgressTimeout is how long a blob download may go without
// receiving a byte when Config.PullProgressTimeout is 0.
const DefaultPullProgressTimeout = 5 * time.Minute

func (s *Store) progressTimeout() time.Duration {
	if s.cfg.PullProgressTimeout > 0 {
		return s.cfg.PullProgressTimeout
	}
	return DefaultPullProgressTimeout
}

// stallError is the cause a watched download is cancelled with; it is of
// errdefs' deadline-exceeded class.
type stallError struct{ after time.Duration }

// DeadlineExceeded marks the error for errdefs.IsDeadlineExceeded.
func (*stallError) DeadlineExceeded() {}

func (e *stallError) Error() string {
	return fmt.Sprintf("no progress for %s", e.after)
}

// openWatched opens a blob through open with a watchdog: when no byte
// arrives for timeout (counting from the request, so a registry that never
// answers is caught too) the download's context is cancelled. Errors caused
// by the watchdog satisfy errdefs.IsDeadlineExceeded.
func openWatched(ctx context.Context, timeout time.Duration, open func(context.Context) (io.ReadCloser, error)) (io.ReadCloser, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	stall := &stallError{after: timeout}
	timer := time.AfterFunc(timeout, func() { cancel(stall) })
	rc, err := open(ctx)
	if err != nil {
		timer.Stop()
		err = stalled(ctx, err)
		cancel(nil)
		return nil, err
	}
	return &watchedReader{rc: rc, ctx: ctx, cancel: cancel, timer: timer, timeout: timeout}, nil
}

// stalled rewrites err as a deadline error when the watchdog caused it.
func stalled(ctx context.Context, err error) error {
	var se *stallError
	if errors.As(context.Cause(ctx), &se) {
		return fmt.Errorf("download stalled: %w", se)
	}
	return err
}

// watchedReader re-arms its timer on every read that returns bytes.
type watchedReader struct {
	rc      io.ReadCloser
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	timeout time.Duration
	once    sync.Once
}

func (w *watchedReader) Read(p []byte) (int, error) {
	n, err := w.rc.Read(p)
	if n > 0 {
		w.timer.Reset(w.timeout)
	}
	if err != nil && err != io.EOF {
		err = stalled(w.ctx, err)
	}
	return n, err
}

func (w *watchedReader) Close() error {
	w.once.Do(func() {
		w.timer.Stop()
		w.cancel(nil)
	})
	return w.rc.Close()
}
