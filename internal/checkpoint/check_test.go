package checkpoint

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

// fakeCriu writes a criu that runs script, and returns its path.
func fakeCriu(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "criu")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCheckCriuCutShortIsTheDeadline: a `criu check` the caller's deadline
// kills is that deadline, not a criu that does not work, and is not taken
// as a pass; a failing check is FailedPrecondition.
func TestCheckCriuCutShortIsTheDeadline(t *testing.T) {
	s := New(Config{Criu: fakeCriu(t, "exec sleep 10")}, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := s.checkCriu(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Errorf("check cut short by the deadline: %v, want DeadlineExceeded", err)
	}
	if s.criuOK {
		t.Error("a check cut short was taken as a pass")
	}

	s = New(Config{Criu: fakeCriu(t, "echo 'Looks bad.'; exit 1")}, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := s.checkCriu(context.Background()); !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Errorf("failing check: %v, want FailedPrecondition", err)
	}
}
