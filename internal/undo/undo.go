package undo

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Timeout bounds a whole rollback.
const Timeout = 30 * time.Second

// Stack is a LIFO list of named undo actions. The zero value is ready.
type Stack struct {
	steps []step
}

type step struct {
	name string
	fn   func(context.Context) error
}

// Push adds the action that undoes the step just taken.
func (s *Stack) Push(name string, fn func(context.Context) error) {
	s.steps = append(s.steps, step{name, fn})
}

// Run undoes every step, newest first, on a context that outlives the
// caller's cancellation, and logs the steps that fail to undo. It empties
// the stack.
func (s *Stack) Run(ctx context.Context, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), Timeout)
	defer cancel()
	for i := len(s.steps) - 1; i >= 0; i-- {
		st := s.steps[i]
		if err := st.fn(ctx); err != nil {
			log.Error("rollback step failed", "step", st.name, "err", fmt.Errorf("undo %s: %w", st.name, err))
		}
	}
	s.steps = nil
}
