package netns

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// Spares keeps network namespaces made ahead of need, loopback up. Making
// one costs the kernel more than all the other kinds a pod pins together,
// and it is the same for every pod: a pod on a CNI network takes a spare
// instead of waiting for a new one. A spare is held by an open descriptor
// only, pinned nowhere, so it goes with its daemon, however that ends.
type Spares struct {
	size int
	log  *slog.Logger

	mu      sync.Mutex
	ready   []*os.File
	filling bool
	closed  bool
	fills   sync.WaitGroup
}

// NewSpares returns a keeper of size spares; it makes none until Warm.
func NewSpares(size int, log *slog.Logger) *Spares {
	return &Spares{size: size, log: log}
}

// Warm makes spares in the background until size are ready.
func (s *Spares) Warm() { s.refill() }

// Take pins a spare network namespace at target, which must not exist. It
// reports false, having made nothing, when no spare is ready. Its
// replacement waits for Warm: making a namespace takes kernel locks that
// the CNI plugins setting up the pod want too.
func (s *Spares) Take(target string, hold Holder) (bool, error) {
	s.mu.Lock()
	if len(s.ready) == 0 {
		s.mu.Unlock()
		return false, nil
	}
	ns := s.ready[0]
	s.ready = s.ready[1:]
	s.mu.Unlock()
	defer ns.Close()

	if err := pinAt(hold, int(ns.Fd()), target); err != nil {
		_ = os.Remove(target)
		return false, fmt.Errorf("pin spare network namespace: %w", err)
	}
	return true, nil
}

// Pin is Pin with the network namespace, when req asks for one, taken from
// the spares if one is ready, and made as Pin makes it otherwise.
func (s *Spares) Pin(req Request) (map[Kind]string, error) {
	if !slices.Contains(req.Kinds, Net) {
		return Pin(req)
	}
	if err := os.MkdirAll(req.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("pin namespaces: %w", err)
	}
	target := filepath.Join(req.Dir, string(Net))
	took, err := s.Take(target, req.Hold)
	if err != nil {
		s.log.Warn("take a spare network namespace; making one", "err", err)
	}
	if !took {
		return Pin(req)
	}
	rest := req
	rest.Kinds = slices.DeleteFunc(slices.Clone(req.Kinds), func(k Kind) bool { return k == Net })
	pinned, err := Pin(rest)
	if err != nil {
		// Pin has removed req.Dir, the spare's pin with it.
		return nil, err
	}
	pinned[Net] = target
	return pinned, nil
}

// Close stops making spares and lets those made go.
func (s *Spares) Close() {
	s.mu.Lock()
	s.closed = true
	ready := s.ready
	s.ready = nil
	s.mu.Unlock()
	s.fills.Wait()
	for _, f := range ready {
		f.Close()
	}
}

// refill makes spares in the background until size are ready.
func (s *Spares) refill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.filling || s.closed || len(s.ready) >= s.size {
		return
	}
	s.filling = true
	s.fills.Add(1)
	go func() {
		defer s.fills.Done()
		for {
			ns, err := makeSpare()
			s.mu.Lock()
			if err != nil || s.closed {
				s.filling = false
				s.mu.Unlock()
				if err != nil {
					s.log.Warn("make a spare network namespace", "err", err)
				} else {
					ns.Close()
				}
				return
			}
			s.ready = append(s.ready, ns)
			if len(s.ready) >= s.size {
				s.filling = false
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
		}
	}()
}

// makeSpare makes a network namespace with loopback up and returns a
// descriptor that holds it.
func makeSpare() (*os.File, error) {
	type result struct {
		f   *os.File
		err error
	}
	done := make(chan result, 1)
	go func() {
		// The thread ends up inside the new namespace: it is locked and
		// never unlocked, so the runtime discards it when this goroutine
		// returns.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			done <- result{err: fmt.Errorf("unshare network namespace: %w", err)}
			return
		}
		if err := loopbackUp(); err != nil {
			done <- result{err: err}
			return
		}
		f, err := os.Open(fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid()))
		if err != nil {
			err = fmt.Errorf("open new network namespace: %w", err)
		}
		done <- result{f, err}
	}()
	r := <-done
	return r.f, r.err
}
