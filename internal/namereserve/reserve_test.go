package namereserve

import (
	"context"
	"errors"
	"testing"

	"github.com/containerd/errdefs"
)

func TestCreateThenDuplicate(t *testing.T) {
	n := New()
	id, err := n.Create(context.Background(), "pod", "a", func(context.Context) error { return nil })
	if err != nil || id != "a" {
		t.Fatalf("Create = %q, %v; want a, nil", id, err)
	}
	_, err = n.Create(context.Background(), "pod", "b", func(context.Context) error {
		t.Error("second create ran")
		return nil
	})
	if !errdefs.IsAlreadyExists(err) {
		t.Fatalf("duplicate Create error = %v, want AlreadyExists", err)
	}
}

func TestRetryCollectsTimedOutAttempt(t *testing.T) {
	n := New()
	release := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	go func() {
		<-started
		cancel() // the kubelet's deadline passes while the first attempt works
	}()
	_, err := n.Create(ctx, "pod", "first", func(ctx context.Context) error {
		close(started)
		<-release
		return ctx.Err() // must not see the caller's cancellation
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("first Create error = %v, want Canceled", err)
	}

	go close(release)
	id, err := n.Create(context.Background(), "pod", "second", func(context.Context) error {
		t.Error("retry started a second creation")
		return nil
	})
	if err != nil || id != "first" {
		t.Fatalf("retry = %q, %v; want first, nil", id, err)
	}
	if _, err := n.Create(context.Background(), "pod", "third", nil); !errdefs.IsAlreadyExists(err) {
		t.Fatalf("third Create error = %v, want AlreadyExists", err)
	}
}

func TestFailedCreateFreesName(t *testing.T) {
	n := New()
	boom := errors.New("boom")
	if _, err := n.Create(context.Background(), "pod", "a", func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Create error = %v, want boom", err)
	}
	id, err := n.Create(context.Background(), "pod", "b", func(context.Context) error { return nil })
	if err != nil || id != "b" {
		t.Fatalf("Create after failure = %q, %v; want b, nil", id, err)
	}
}

func TestReleaseAndHold(t *testing.T) {
	n := New()
	n.Hold("pod", "a")
	if _, err := n.Create(context.Background(), "pod", "b", nil); !errdefs.IsAlreadyExists(err) {
		t.Fatalf("Create of held name = %v, want AlreadyExists", err)
	}
	n.Release("pod", "other")
	if _, err := n.Create(context.Background(), "pod", "b", nil); !errdefs.IsAlreadyExists(err) {
		t.Fatal("Release by a non-holder freed the name")
	}
	n.Release("pod", "a")
	if id, err := n.Create(context.Background(), "pod", "b", func(context.Context) error { return nil }); err != nil || id != "b" {
		t.Fatalf("Create after Release = %q, %v", id, err)
	}
}
