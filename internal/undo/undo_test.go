package undo

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRunIsLIFOAndSurvivesCancel(t *testing.T) {
	var got []string
	var s Stack
	for _, name := range []string{"a", "b", "c"} {
		s.Push(name, func(ctx context.Context) error {
			if ctx.Err() != nil {
				t.Errorf("undo %s ran on a cancelled context", name)
			}
			got = append(got, name)
			if name == "b" {
				return errors.New("fails")
			}
			return nil
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.Run(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if diff := cmp.Diff([]string{"c", "b", "a"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	s.Run(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if len(got) != 3 {
		t.Errorf("second Run repeated steps: %v", got)
	}
}
