package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/failpoint"
	"github.com/crib-dev/crib/internal/lifecycle"
	"github.com/crib-dev/crib/internal/mount"
	"github.com/crib-dev/crib/internal/netns"
	"github.com/crib-dev/crib/internal/pause"
)

// Stop makes a sandbox not ready: its pause process is killed and its
// namespaces and /dev/shm are released. The caller has stopped the pod's
// containers. Stopping a stopped or unknown sandbox succeeds.
func (m *Manager) Stop(ctx context.Context, id string) error {
	s, unlock, err := m.locked(id)
	if s == nil || err != nil {
		return err
	}
	defer unlock()
	if m.cfg.Plugins != nil && s.State == Ready {
		// Its containers are stopped, its network not yet torn down.
		m.cfg.Plugins.StopPodSandbox(ctx, *s)
	}
	if err := m.release(ctx, s, false); err != nil {
		return fmt.Errorf("stop sandbox %s: %w", s.ID, err)
	}
	if err := failpoint.Check("StopPodSandbox/released"); err != nil {
		return err
	}
	stopped := s.State != NotReady
	if stopped {
		s.State = NotReady
		s.PausePid, s.PauseStart = 0, 0
		if err := m.save(s); err != nil {
			return err
		}
		m.log.Info("sandbox stopped", "sandbox", s.ID)
	}
	m.mu.Lock()
	if cur, ok := m.byID[s.ID]; ok {
		*cur = *s
	}
	if stopped {
		m.publish(lifecycle.Stopped, s.ID)
	}
	m.mu.Unlock()
	return nil
}

// Remove deletes a sandbox, stopping it first if needed. The caller has
// removed the pod's containers. Removing an unknown sandbox succeeds.
func (m *Manager) Remove(ctx context.Context, id string) error {
	s, unlock, err := m.locked(id)
	if s == nil || err != nil {
		return err
	}
	defer unlock()
	if m.cfg.Plugins != nil && s.State == Ready {
		// Removed without a Stop: the plugins hear of the stop first.
		m.cfg.Plugins.StopPodSandbox(ctx, *s)
	}
	if err := m.teardown(ctx, s); err != nil {
		return fmt.Errorf("remove sandbox %s: %w", s.ID, err)
	}
	if err := failpoint.Check("RemovePodSandbox/teardown"); err != nil {
		return err
	}
	if err := m.db.Delete(recordKind, s.ID); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.byID, s.ID)
	// The lock goes with the sandbox: a call waiting on it finds the
	// sandbox gone once it gets it, and one that comes later makes a new
	// lock and finds the same (ids are never reused).
	m.locks.Delete(s.ID)
	if s.State == Ready {
		// Removed without a Stop: it stopped all the same.
		m.publish(lifecycle.Stopped, s.ID)
	}
	m.publish(lifecycle.Deleted, s.ID)
	m.mu.Unlock()
	m.names.Release(nameKey(s.Config.GetMetadata()), s.ID)
	m.cfg.Tracer.EndPod(s.ID, errRemovedUnstarted)
	m.log.Info("sandbox removed", "sandbox", s.ID)
	if m.cfg.Plugins != nil {
		m.cfg.Plugins.RemovePodSandbox(ctx, *s)
	}
	return nil
}

// locked takes the lock that serialises Stop and Remove of the sandbox id
// and returns a copy of the sandbox as it is under that lock: one that was
// removed while this call waited is nil, never written back.
func (m *Manager) locked(id string) (*Sandbox, func(), error) {
	s, err := m.Get(id)
	if errdefs.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	full := s.ID
	unlock := m.lock(full)
	s, err = m.Get(full)
	if err != nil {
		unlock()
		if errdefs.IsNotFound(err) {
			// Removed while this call waited, or before it took the
			// lock, which it may then have made anew: it goes too.
			m.locks.Delete(full)
			return nil, nil, nil
		}
		return nil, nil, err
	}
	return &s, unlock, nil
}

// release undoes what a ready sandbox holds at runtime. The network goes
// first, while its namespace is still there for the plugins; if it cannot
// be torn down, nothing else is, so that a retry can. forceDetach tears the
// network down even if the record says it is not attached.
func (m *Manager) release(ctx context.Context, s *Sandbox, forceDetach bool) error {
	if err := m.detach(ctx, s, forceDetach); err != nil {
		return err
	}
	// Also a step of RemovePodSandbox (teardown), which arms its own.
	if err := failpoint.Check("StopPodSandbox/network"); err != nil {
		return err
	}
	var errs []error
	if err := killPause(s); err != nil {
		errs = append(errs, err)
	}
	if s.ShmPath != "" && s.ShmPath != "/dev/shm" {
		if err := mount.Unmount(s.ShmPath); err != nil {
			errs = append(errs, err)
		}
	}
	if err := netns.Remove(s.Dir+"/ns", m.cfg.NSHold); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// teardown removes everything a sandbox made on the machine, whatever state
// it got to.
func (m *Manager) teardown(ctx context.Context, s *Sandbox) error {
	// A creation that died half-way may have attached the pod without
	// recording it.
	if err := m.release(ctx, s, s.State == Creating); err != nil {
		return err
	}
	var errs []error
	if err := mount.UnmountTree(s.Dir); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(s.Dir); err != nil {
		errs = append(errs, fmt.Errorf("remove sandbox dir: %w", err))
	}
	if err := m.removeCgroup(ctx, s); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func pauseAlive(s *Sandbox) bool { return pause.Alive(s.PausePid, s.PauseStart) }

// killPause kills the pod's init, which takes every process left in the
// shared PID namespace with it, and waits briefly for it to go. A sandbox
// whose creation died before it recorded the pid is searched for one.
func killPause(s *Sandbox) error {
	if s.State == Creating && s.PausePid == 0 {
		for _, pid := range pause.Find(s.ID) {
			orphan := Sandbox{PausePid: pid}
			if start, err := pause.StartTime(pid); err == nil {
				orphan.PauseStart = start
				if err := killPause(&orphan); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if !pauseAlive(s) {
		return nil
	}
	if err := syscall.Kill(s.PausePid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill pod init %d: %w", s.PausePid, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for pauseAlive(s) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if pauseAlive(s) {
		return fmt.Errorf("pod init %d still alive after SIGKILL", s.PausePid)
	}
	return nil
}
