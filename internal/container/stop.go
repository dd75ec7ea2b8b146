package container

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/cgroupfs"
	"github.com/crib-dev/crib/internal/events"
	"github.com/crib-dev/crib/internal/monitor"
	"github.com/crib-dev/crib/internal/mount"
	"github.com/crib-dev/crib/internal/ociruntime"
)

// killWait bounds how long Stop waits for a SIGKILLed container to go.
const killWait = 10 * time.Second

// Stop stops a container: its stop signal, then SIGKILL after timeout. A
// container that is not running, or unknown, is fine.
func (m *Manager) Stop(ctx context.Context, id string, timeout time.Duration) error {
	e, _, err := m.locked(id)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer e.op.Unlock()
	return m.stop(ctx, e, timeout)
}

func (m *Manager) stop(ctx context.Context, e *entry, timeout time.Duration) error {
	c, _ := m.Get(e.c.ID)
	rt, err := m.runtime(c.RuntimeHandler)
	if err != nil {
		return err
	}
	switch c.State {
	case Exited, Created:
		// A created container has no process yet: the runtime only
		// learns of it at Start.
		return nil
	case Unknown:
		// Nothing is known: make sure no process of it is left.
		if err := rt.Kill(ctx, c.ID, syscall.SIGKILL, true); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("stop container %s: %w", c.ID, err)
		}
		return m.update(e, func(c *Container) {
			c.State = Exited
			c.FinishedAt = time.Now()
			c.ExitCode = 137
		})
	}
	if c.State == Running && timeout > 0 {
		sig := m.stopSignal(c)
		if err := rt.Kill(ctx, c.ID, sig, false); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("stop container %s: signal %v: %w", c.ID, sig, err)
		}
		graceCtx, cancel := context.WithTimeout(ctx, timeout)
		exited := waitExited(graceCtx, e)
		cancel()
		if exited {
			m.log.Info("container stopped", "container", c.ID)
			return nil
		}
	}
	if err := rt.Kill(ctx, c.ID, syscall.SIGKILL, true); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("stop container %s: SIGKILL: %w", c.ID, err)
	}
	killCtx, cancel := context.WithTimeout(ctx, killWait)
	defer cancel()
	if !waitExited(killCtx, e) {
		// The monitor has not reported: believe the runtime if it says
		// the container is gone, rather than the state machine.
		st, err := rt.State(ctx, c.ID)
		if !errdefs.IsNotFound(err) && (err != nil || st.Status != ociruntime.StatusStopped) {
			return fmt.Errorf("stop container %s: still running %s after SIGKILL: %w", c.ID, killWait, context.DeadlineExceeded)
		}
		m.log.Warn("container gone without its monitor's report", "container", c.ID)
		m.recordExit(e, monitor.Exit{ExitCode: 128 + int(syscall.SIGKILL), ExitedAt: time.Now()})
	}
	m.log.Info("container killed", "container", c.ID)
	return nil
}

// stopSignal is the signal that stops c: the CRI config's, else the
// image's STOPSIGNAL, else SIGTERM.
func (m *Manager) stopSignal(c Container) syscall.Signal {
	if sig := c.EffectiveStopSignal(); sig != 0 {
		return sig
	}
	return syscall.SIGTERM
}

// EffectiveStopSignal is the CRI config's stop signal, else the image's
// STOPSIGNAL, or 0 when neither names one (SIGTERM is then used).
func (c Container) EffectiveStopSignal() syscall.Signal {
	if s := c.Config.GetStopSignal(); s != runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT {
		if sig := unix.SignalNum(strings.TrimPrefix(s.String(), "SIGNAL_")); sig != 0 {
			return sig
		}
	}
	if c.StopSignal != "" {
		if sig, err := parseSignal(c.StopSignal); err == nil {
			return sig
		}
	}
	return 0
}

// parseSignal reads a STOPSIGNAL value: "SIGQUIT", "QUIT" or "3".
func parseSignal(s string) (syscall.Signal, error) {
	var n int
	if _, err := fmt.Sscanf(s, "%d", &n); err == nil && fmt.Sprint(n) == s {
		return syscall.Signal(n), nil
	}
	if sig := unix.SignalNum(s); sig != 0 {
		return sig, nil
	}
	if sig := unix.SignalNum("SIG" + s); sig != 0 {
		return sig, nil
	}
	return 0, fmt.Errorf("unknown signal %q", s)
}

// Remove stops a container if needed and deletes it with its rootfs,
// bundle and runtime files. Its log stays: the log directory is the
// kubelet's, which removes logs itself. Removing an unknown container
// succeeds.
func (m *Manager) Remove(ctx context.Context, id string) error {
	e, _, err := m.locked(id)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer e.op.Unlock()
	if err := m.stop(ctx, e, 0); err != nil {
		return fmt.Errorf("remove container %s: %w", e.c.ID, err)
	}
	c, _ := m.Get(e.c.ID)
	if err := m.teardown(ctx, &c); err != nil {
		return fmt.Errorf("remove container %s: %w", c.ID, err)
	}
	// Under e.record: no update is saving the record while it goes, nor
	// saves it again afterwards (update finds the container unlisted).
	e.record.Lock()
	if err := m.db.Delete(recordKind, c.ID); err != nil {
		e.record.Unlock()
		return err
	}
	m.mu.Lock()
	delete(m.byID, c.ID)
	m.publish(events.Deleted, &c)
	m.mu.Unlock()
	e.record.Unlock()
	m.images.Release(c.ChainIDs)
	for _, v := range c.ImageVolumes {
		m.images.Unhold(v.ImageID, c.ID)
	}
	m.names.Release(nameKey(c.SandboxID, c.Config.GetMetadata()), c.ID)
	m.log.Info("container removed", "container", c.ID)
	return nil
}

// teardown deletes the runtime's container and every file and mount of c,
// whatever state it got to.
func (m *Manager) teardown(ctx context.Context, c *Container) error {
	var errs []error
	rt, rtErr := m.runtime(c.RuntimeHandler)
	// The bundle's mounts, and those runc leaves in its state directory
	// when it is killed while it works on the container (a bind mount of a
	// copy of its own binary, which delete could not remove), from one
	// reading of the mount table.
	dirs := []string{m.bundle(c.ID)}
	if rtErr == nil && rt.Root != "" {
		dirs = append(dirs, filepath.Join(rt.Root, c.ID))
	}
	unmountErr := mount.UnmountUnder(dirs...)
	if rtErr == nil {
		if err := rt.Delete(ctx, c.ID, true); err != nil {
			errs = append(errs, err)
		}
	}
	// The runtime removes the container's cgroup; one killed while it made
	// it (a start cut short) leaves it, perhaps with a process, and then
	// the pod's cgroup could not go.
	if c.CgroupsPath != "" && !strings.Contains(c.CgroupsPath, ":") {
		if err := cgroupfs.RemoveTree("/sys/fs/cgroup", c.CgroupsPath); err != nil {
			errs = append(errs, err)
		}
	}
	if unmountErr != nil {
		// Not one file is removed under a mount that stayed: it may be an
		// image's shared layer.
		return errors.Join(append(errs, unmountErr)...)
	}
	b := m.bundle(c.ID)
	if err := os.Remove(m.socket(c.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, dir := range []string{b, m.stateDir(c.ID)} {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", filepath.Base(filepath.Dir(dir)), err))
		}
	}
	return errors.Join(errs...)
}

// teardownConcurrency bounds how many of a pod's containers are stopped or
// removed at once. Each is mostly the OCI runtime's own process, mounts and
// a sync of the record, which overlap well even on a few cores.
const teardownConcurrency = 4

// StopInSandbox stops every container of the sandbox, several at once, and
// returns every failure.
func (m *Manager) StopInSandbox(ctx context.Context, sandboxID string, timeout time.Duration) error {
	return m.eachInSandbox(sandboxID, func(id string) error { return m.Stop(ctx, id, timeout) })
}

// RemoveInSandbox removes every container of the sandbox, several at once,
// and returns every failure.
func (m *Manager) RemoveInSandbox(ctx context.Context, sandboxID string) error {
	return m.eachInSandbox(sandboxID, func(id string) error { return m.Remove(ctx, id) })
}

// eachInSandbox calls fn for each container of the sandbox, at most
// teardownConcurrency at a time, and joins what they return.
func (m *Manager) eachInSandbox(sandboxID string, fn func(id string) error) error {
	var ids []string
	m.mu.RLock()
	for id, e := range m.byID {
		if e.c.SandboxID == sandboxID {
			ids = append(ids, id)
		}
	}
	m.mu.RUnlock()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, teardownConcurrency)
	)
	for _, id := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(id); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
