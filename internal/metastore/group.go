package metastore

import (
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// committer runs the writes of concurrent callers in shared transactions
// (group commit): bbolt takes one writer at a time and syncs the file at
// each commit, so with the node's pods starting and going eight at a time
// the writers queued on that lock, each paying a sync of its own. A
// writer that finds no commit under way commits at once, as before, with
// whatever others queued meanwhile; writers that arrive during a commit
// wait for it and go together in the next. No write waits for a timer,
// unlike bolt.DB.Batch, so a lone pod's start pays nothing for it.
type committer struct {
	db *bolt.DB

	mu         sync.Mutex
	pending    []*write
	committing bool
}

// write is one caller's transaction function and its outcome.
type write struct {
	fn   func(*bolt.Tx) error
	err  error
	done chan struct{}
	// lead is closed when this writer is to commit the queue.
	lead chan struct{}
}

// update runs fn in a writable transaction and returns once that
// transaction is committed (or failed). fn may run more than once (see
// commit), so it must not have effects outside the transaction.
func (c *committer) update(fn func(*bolt.Tx) error) error {
	w := &write{fn: contained(fn), done: make(chan struct{}), lead: make(chan struct{})}
	c.mu.Lock()
	c.pending = append(c.pending, w)
	if !c.committing {
		c.committing = true
		c.mu.Unlock()
		c.lead()
		<-w.done
		return w.err
	}
	c.mu.Unlock()
	select {
	case <-w.done:
	case <-w.lead:
		c.lead()
		<-w.done
	}
	return w.err
}

// lead commits the writes queued now, then hands the lead to the first
// writer queued since, or ends it: no writer commits for others longer
// than one transaction.
func (c *committer) lead() {
	c.mu.Lock()
	batch := c.pending
	c.pending = nil
	c.mu.Unlock()
	c.commit(batch)
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.committing = false
		c.mu.Unlock()
		return
	}
	next := c.pending[0]
	c.mu.Unlock()
	close(next.lead)
}

// commit runs the batch in one transaction. If that fails, each write is
// run again in a transaction of its own, so that a failure is only its
// writer's.
func (c *committer) commit(batch []*write) {
	err := c.db.Update(func(tx *bolt.Tx) error {
		for _, w := range batch {
			if err := w.fn(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && len(batch) > 1 {
		for _, w := range batch {
			w.err = c.db.Update(w.fn)
			close(w.done)
		}
		return
	}
	for _, w := range batch {
		w.err = err
		close(w.done)
	}
}

// contained is fn with a panic turned into its error: a panic in one
// writer's function, run by whichever writer leads the commit, would
// otherwise unwind another caller's goroutine and leave the committer
// marked busy, so that every later write waited for ever.
func contained(fn func(*bolt.Tx) error) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("metadata write panicked: %v", r)
			}
		}()
		return fn(tx)
	}
}
