package container

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

func TestEdgeError(t *testing.T) {
	// The runtime's words do not decide: a message that reads as one class
	// is answered by the container's fate.
	brokenPipe := errors.New("exec failed: write init-p: broken pipe")
	stoppedWords := fmt.Errorf("cannot exec in a stopped container: %w", errdefs.ErrFailedPrecondition)
	tests := []struct {
		name string
		err  error
		fate fate
		is   func(error) bool
		// same: the error is err itself.
		same bool
	}{
		{"removed", brokenPipe, fate{removed: true}, errdefs.IsNotFound, false},
		{"removed, words of a stop", stoppedWords, fate{removed: true, state: Running}, errdefs.IsNotFound, false},
		{"runtime forgot it while recorded exited", brokenPipe, fate{removed: true, state: Exited}, errdefs.IsNotFound, false},
		{"recorded exited", brokenPipe, fate{state: Exited}, errdefs.IsFailedPrecondition, false},
		{"recorded unknown", brokenPipe, fate{state: Unknown}, errdefs.IsFailedPrecondition, false},
		{"init exited, not yet recorded", brokenPipe, fate{state: Running, initExited: true}, errdefs.IsFailedPrecondition, false},
		{"still running", brokenPipe, fate{state: Running}, func(err error) bool { return !errdefs.IsNotFound(err) && !errdefs.IsFailedPrecondition(err) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := edgeError("c1", tt.err, tt.fate)
			if !tt.is(got) {
				t.Errorf("edgeError = %v: wrong class", got)
			}
			if tt.same != (got == tt.err) {
				t.Errorf("edgeError = %v, want the failure itself: %v", got, tt.same)
			}
			if !strings.Contains(got.Error(), "c1") && !tt.same {
				t.Errorf("edgeError = %v does not name the container", got)
			}
			if errdefs.IsNotFound(got) && errdefs.IsFailedPrecondition(got) {
				t.Errorf("edgeError = %v is of two classes", got)
			}
		})
	}
}

func TestFateEnded(t *testing.T) {
	tests := []struct {
		f    fate
		want bool
	}{
		{fate{state: Running}, false},
		{fate{state: Running, initExited: true}, true},
		{fate{state: Exited}, true},
		{fate{removed: true, state: Exited}, false},
	}
	for _, tt := range tests {
		if got := tt.f.ended(); got != tt.want {
			t.Errorf("%+v.ended() = %v, want %v", tt.f, got, tt.want)
		}
	}
}
