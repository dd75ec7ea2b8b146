package sandbox

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/lifecycle"
)

// recorder is an lifecycle.Publisher that keeps what it is told.
type recorder struct {
	mu  sync.Mutex
	got []lifecycle.Event
}

func (r *recorder) Publish(e lifecycle.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, e)
}

// kinds returns the kinds and ids recorded, without times.
func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.got {
		if e.At.IsZero() {
			out = append(out, "zero time")
		}
		out = append(out, e.Kind.String()+" "+e.ID+" in "+e.SandboxID)
	}
	return out
}

func TestLifecycleEvents(t *testing.T) {
	requiresRoot(t)
	dir := t.TempDir()
	m, db := newManager(t, dir)
	defer db.Close()
	rec := &recorder{}
	m.cfg.Events = rec
	ctx := context.Background()

	id, err := m.Run(ctx, podConfig("ev", runtimeapi.NamespaceMode_CONTAINER), "")
	if err != nil {
		t.Fatal(err)
	}
	// Stop and Remove are idempotent; only the transitions are events.
	for i := 0; i < 2; i++ {
		if err := m.Stop(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		if err := m.Remove(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"created " + id + " in " + id,
		"started " + id + " in " + id,
		"stopped " + id + " in " + id,
		"deleted " + id + " in " + id,
	}
	if diff := cmp.Diff(want, rec.kinds()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	assertNothingLeft(t, dir)
}

func TestRemoveReadySandboxPublishesStoppedAndDeleted(t *testing.T) {
	requiresRoot(t)
	dir := t.TempDir()
	m, db := newManager(t, dir)
	defer db.Close()
	ctx := context.Background()
	id, err := m.Run(ctx, podConfig("direct", runtimeapi.NamespaceMode_CONTAINER), "")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	m.cfg.Events = rec
	if err := m.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	want := []string{"stopped " + id + " in " + id, "deleted " + id + " in " + id}
	if diff := cmp.Diff(want, rec.kinds()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	assertNothingLeft(t, dir)
}
