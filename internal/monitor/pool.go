package monitor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Pool keeps monitors started ahead of need, so that starting a container
// does not wait for a monitor process to start up: an idle monitor only
// waits for its container's configuration on a connection to the daemon.
// When the daemon closes the pool, or dies, that connection closes and the
// idle monitors quit; nothing is left behind. A monitor that has its
// container is on its own, as one from Start.
type Pool struct {
	self string
	size int

	mu      sync.Mutex
	idle    []*process
	filling bool
	closed  bool
}

// NewPool returns a pool that keeps size monitors of the monitor binary
// self waiting. It starts none until the first Start.
func NewPool(self string, size int) *Pool {
	return &Pool{self: self, size: size}
}

// Start is Start with a monitor from the pool (or a new one when the pool
// is empty). cfg.Binary is not used.
func (p *Pool) Start(ctx context.Context, cfg StartConfig) (Handle, error) {
	if err := cfg.validate(); err != nil {
		return Handle{}, err
	}
	for {
		m, pooled, err := p.take()
		if err != nil {
			return Handle{}, fmt.Errorf("start monitor for %s: %w", cfg.ID, err)
		}
		msg, err := json.Marshal(cfg)
		if err != nil {
			return Handle{}, fmt.Errorf("start monitor for %s: %w", cfg.ID, err)
		}
		if _, err := m.conn.Write(append(msg, '\n')); err != nil {
			// The idle monitor died (killed by someone): use another.
			m.conn.Close()
			m.kill()
			if pooled {
				continue
			}
			return Handle{}, fmt.Errorf("start monitor for %s: %w", cfg.ID, err)
		}
		// Refill once this container is up: a monitor starting up now
		// would compete with the runtime for the CPU.
		defer p.refill()
		return m.await(ctx, cfg)
	}
}

// Idle is the number of monitors waiting for a container.
func (p *Pool) Idle() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// Warm starts the pool's idle monitors in the background.
func (p *Pool) Warm() { p.refill() }

// take returns an idle monitor, or a new one when none waits.
func (p *Pool) take() (*process, bool, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		m := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return m, true, nil
	}
	p.mu.Unlock()
	m, err := p.spawnIdle()
	return m, false, err
}

// refill starts monitors in the background until size wait.
func (p *Pool) refill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.filling || p.closed || len(p.idle) >= p.size {
		return
	}
	p.filling = true
	go func() {
		for {
			m, err := p.spawnIdle()
			p.mu.Lock()
			if err != nil || p.closed {
				p.filling = false
				p.mu.Unlock()
				if m != nil {
					m.conn.Close()
				}
				return
			}
			p.idle = append(p.idle, m)
			if len(p.idle) >= p.size {
				p.filling = false
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
		}
	}()
}

func (p *Pool) spawnIdle() (*process, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("monitor connection: %w", err)
	}
	daemonEnd, childEnd := os.NewFile(uintptr(fds[0]), "monitor"), os.NewFile(uintptr(fds[1]), "daemon")
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		daemonEnd.Close()
		childEnd.Close()
		return nil, err
	}
	defer devNull.Close()
	return spawn(p.self, []string{"monitor", idleCommand}, devNull, childEnd, daemonEnd)
}

// Close lets the idle monitors go. Monitors that have a container are not
// affected.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, m := range p.idle {
		m.conn.Close()
	}
	p.idle = nil
}
