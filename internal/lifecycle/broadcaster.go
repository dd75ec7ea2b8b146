package lifecycle

import (
	"errors"
	"sync"
)

// DefaultBuffer is the per-subscriber buffer of a Broadcaster made with a
// buffer size of zero.
const DefaultBuffer = 1024

var (
	// ErrOverflow ends a subscription whose reader fell more than its
	// buffer behind.
	ErrOverflow = errors.New("subscriber fell behind: events dropped")
	// ErrClosed ends the subscriptions of a closed Broadcaster.
	ErrClosed = errors.New("event broadcaster closed")
)

// Broadcaster hands every published value to every current subscriber.
// Its zero value is not usable; use NewBroadcaster.
type Broadcaster[T any] struct {
	buffer int

	mu     sync.Mutex
	subs   map[*Subscription[T]]struct{}
	closed bool
}

// NewBroadcaster returns a Broadcaster whose subscribers each buffer up to
// buffer values (DefaultBuffer if buffer <= 0).
func NewBroadcaster[T any](buffer int) *Broadcaster[T] {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	return &Broadcaster[T]{buffer: buffer, subs: map[*Subscription[T]]struct{}{}}
}

// Subscription is one subscriber's view of a Broadcaster.
type Subscription[T any] struct {
	b   *Broadcaster[T]
	c   chan T
	err error // set, under b.mu, before c is closed
}

// Subscribe adds a subscriber. It gets every value published from now on
// until it closes the subscription, falls behind, or the Broadcaster is
// closed. Subscribing to a closed Broadcaster returns a subscription that
// has already ended with ErrClosed.
func (b *Broadcaster[T]) Subscribe() *Subscription[T] {
	s := &Subscription[T]{b: b, c: make(chan T, b.buffer)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		s.err = ErrClosed
		close(s.c)
		return s
	}
	b.subs[s] = struct{}{}
	return s
}

// Publish hands v to every subscriber without waiting: a subscriber whose
// buffer is full is dropped with ErrOverflow.
func (b *Broadcaster[T]) Publish(v T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		select {
		case s.c <- v:
		default:
			b.end(s, ErrOverflow)
		}
	}
}

// Subscribers is the number of current subscribers.
func (b *Broadcaster[T]) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// Close ends every subscription with ErrClosed; later Publish calls do
// nothing. Close may be called more than once.
func (b *Broadcaster[T]) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for s := range b.subs {
		b.end(s, ErrClosed)
	}
}

// end removes s and closes its channel; b.mu is held.
func (b *Broadcaster[T]) end(s *Subscription[T], err error) {
	delete(b.subs, s)
	s.err = err
	close(s.c)
}

// C delivers the values in order. It is closed when the subscription
// ends, after the values buffered before the end.
func (s *Subscription[T]) C() <-chan T { return s.c }

// Err says why the subscription ended: nil while it runs or after Close,
// ErrOverflow or ErrClosed.
func (s *Subscription[T]) Err() error {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	return s.err
}

// Close ends the subscription; values still buffered stay readable from C.
// It may be called more than once, and after the subscription has ended.
func (s *Subscription[T]) Close() {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if _, ok := s.b.subs[s]; ok {
		s.b.end(s, nil)
	}
}
