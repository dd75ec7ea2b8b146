package namereserve

import (
	"context"
	"fmt"
	"sync"

	"github.com/containerd/errdefs"
)

// Names maps names to the ids that hold them.
type Names struct {
	mu     sync.Mutex
	byName map[string]*claim
}

type claim struct {
	id        string
	done      chan struct{}
	err       error
	delivered bool
}

// New returns an empty set of names.
func New() *Names {
	return &Names{byName: map[string]*claim{}}
}

// Hold records that name belongs to id, already created (used when state is
// restored after a restart).
func (n *Names) Hold(name, id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := &claim{id: id, done: make(chan struct{}), delivered: true}
	close(c.done)
	n.byName[name] = c
}

// Release frees name if id holds it.
func (n *Names) Release(name, id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c, ok := n.byName[name]; ok && c.id == id {
		delete(n.byName, name)
	}
}

// Create runs create for a new object named name with the given id, unless
// the name is taken. create runs to completion even when ctx is cancelled
// (it gets a context that is not), so that a retry can collect its result.
//
// It returns the id of the object created: id itself, or, when an earlier
// attempt for the same name was still running or had finished with nobody
// to hand its result to, that attempt's id. A name held by an object whose
// creation was delivered gives errdefs.ErrAlreadyExists naming the holder.
func (n *Names) Create(ctx context.Context, name, id string, create func(context.Context) error) (string, error) {
	n.mu.Lock()
	if prev, ok := n.byName[name]; ok {
		n.mu.Unlock()
		return n.collect(ctx, name, prev)
	}
	c := &claim{id: id, done: make(chan struct{})}
	n.byName[name] = c
	n.mu.Unlock()

	go func() {
		err := create(context.WithoutCancel(ctx))
		n.mu.Lock()
		c.err = err
		if err != nil {
			delete(n.byName, name)
		}
		n.mu.Unlock()
		close(c.done)
	}()
	return n.collect(ctx, name, c)
}

// collect waits for c's creation and takes its result if nobody has.
func (n *Names) collect(ctx context.Context, name string, c *claim) (string, error) {
	select {
	case <-c.done:
	case <-ctx.Done():
		return "", fmt.Errorf("create %s: %w", name, ctx.Err())
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if c.delivered {
		return "", fmt.Errorf("name %q is reserved for %s: %w", name, c.id, errdefs.ErrAlreadyExists)
	}
	c.delivered = true
	if c.err != nil {
		return "", c.err
	}
	return c.id, nil
}
