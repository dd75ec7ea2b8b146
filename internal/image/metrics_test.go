package image

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/containerd/errdefs"
)

func TestFailureReason(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{fmt.Errorf("pull image a: %w", errdefs.ErrNotFound), "not_found"},
		{fmt.Errorf("pull image a: %w", errdefs.ErrUnauthenticated), "unauthorized"},
		{fmt.Errorf("pull image a: %w", errdefs.ErrPermissionDenied), "unauthorized"},
		{fmt.Errorf("pull image a: %w", errdefs.ErrInvalidArgument), "invalid"},
		{fmt.Errorf("pull image a: %w: dial tcp: refused", errdefs.ErrUnavailable), "network"},
		{fmt.Errorf("download stalled: %w", &stallError{}), "network"},
		{fmt.Errorf("pull image a: %w", context.Canceled), "canceled"},
		{fmt.Errorf("pull image a: %w", context.DeadlineExceeded), "canceled"},
		{fmt.Errorf("pull image a: %w", errdefs.ErrResourceExhausted), "other"},
		{errors.New("disk full"), "other"},
	}
	for _, tt := range tests {
		if got := FailureReason(tt.err); got != tt.want {
			t.Errorf("FailureReason(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// fakePulls records what a Store tells its PullRecorder.
type fakePulls struct {
	mu       sync.Mutex
	inFlight int
	bytes    int
	reasons  []string
}

func (f *fakePulls) PullStarted() { f.mu.Lock(); f.inFlight++; f.mu.Unlock() }
func (f *fakePulls) PullBytes(n int) {
	f.mu.Lock()
	f.bytes += n
	f.mu.Unlock()
}
func (f *fakePulls) PullFinished(_ time.Duration, reason string) {
	f.mu.Lock()
	f.inFlight--
	f.reasons = append(f.reasons, reason)
	f.mu.Unlock()
}

func TestPullRecorded(t *testing.T) {
	requiresRoot(t)
	reg := newRegistry(t)
	img := testImage(t, "amd64", "v1")
	reg.push(t, "test/app:1.0", img)
	rec := &fakePulls{}
	s := openStore(t, t.TempDir(), Config{Pulls: rec})
	ctx := context.Background()

	if _, err := s.Pull(ctx, reg.host+"/test/app:1.0", Auth{}); err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			t.Fatal(err)
		}
		want += n
	}
	if rec.bytes != int(want) {
		t.Errorf("bytes recorded = %d, want the layers' %d", rec.bytes, want)
	}
	// Again: every layer is there, nothing is downloaded.
	if _, err := s.Pull(ctx, reg.host+"/test/app:1.0", Auth{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pull(ctx, reg.host+"/test/missing:1.0", Auth{}); err == nil {
		t.Fatal("pull of a missing image succeeded")
	}
	if rec.bytes != int(want) {
		t.Errorf("bytes recorded after pulls of present layers = %d, want %d", rec.bytes, want)
	}
	if diff := cmp.Diff([]string{"", "", "not_found"}, rec.reasons); diff != "" {
		t.Errorf("pulls finished with reasons (-want +got):\n%s", diff)
	}
	if rec.inFlight != 0 {
		t.Errorf("%d pulls still in flight", rec.inFlight)
	}
}
