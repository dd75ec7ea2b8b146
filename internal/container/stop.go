package container

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/failpoint"
	"github.com/crib-dev/crib/internal/lifecycle"
	"github.com/crib-dev/crib/internal/monitor"
	"github.com/crib-dev/crib/internal/mount"
	"github.com/crib-dev/crib/internal/ociruntime"
)

// killWait bounds how long Stop waits for a SIGKILLed container to go;
// after killSoon without its exit, the runtime kills it too.
const (
	killWait = 10 * time.Second
	killSoon = 2 * time.Second
)

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
	if err := m.stop(ctx, e, timeout); err != nil {
		return err
	}
	m.release(ctx, e)
	return nil
}

// release frees what e's stopped container still holds on the node though
// nothing of it runs: the mounts of its rootfs and image volumes, and the
// runtime's record of it (whose delete removes its cgroup), as containerd
// does once a task has exited. Its files and record stay for Remove, whose
// teardown does the same again, each step a no-op by then; so a failure
// here is only logged, and a kill -9 at any point leaves what Remove
// finishes. The caller holds e's op lock.
func (m *Manager) release(ctx context.Context, e *entry) {
	c, _ := m.Get(e.c.ID)
	if c.State != Exited || e.released {
		return
	}
	rt, err := m.runtime(c.RuntimeHandler)
	if err != nil {
		return
	}
	dirs := m.hostMountDirs(c.ID)
	if rt.Root != "" {
		dirs = append(dirs, filepath.Join(rt.Root, c.ID))
	}
	if err := mount.UnmountTree(dirs...); err != nil {
		m.log.Warn("release stopped container: left to its removal", "container", c.ID, "err", err)
		return
	}
	// Not forced: the container is stopped, and a forced delete costs
	// runc 1.2+ a 100 ms sleep.
	if err := rt.Delete(ctx, c.ID, false); err != nil {
		m.log.Warn("release stopped container: left to its removal", "container", c.ID, "err", err)
		return
	}
	e.released = true
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
		err := m.update(e, func(c *Container) {
			c.State = Exited
			c.FinishedAt = time.Now()
			c.ExitCode = 137
		})
		if err == nil {
			m.tellStopped(e)
		}
		return err
	}
	exited := false
	if c.State == Running && timeout > 0 {
		sig := m.stopSignal(c)
		if err := m.signal(ctx, e, rt, sig, false); err != nil {
			return fmt.Errorf("stop container %s: signal %v: %w", c.ID, sig, err)
		}
		// The signal is sent: the container may be on its way out, and a
		// restart adopts it, running or exited, either way.
		if err := failpoint.Check("StopContainer/signal"); err != nil {
			return err
		}
		graceCtx, cancel := context.WithTimeout(ctx, timeout)
		exited = waitExited(graceCtx, e)
		cancel()
		if exited {
			m.log.Info("container stopped", "container", c.ID)
		}
	}
	if !exited {
		if err := m.kill(ctx, e, rt); err != nil {
			return err
		}
	}
	// The exit is recorded: a restart lists the container exited.
	return failpoint.Check("StopContainer/recorded")
}

// kill SIGKILLs the container and waits until its exit is recorded.
func (m *Manager) kill(ctx context.Context, e *entry, rt *ociruntime.Runtime) error {
	id := e.c.ID
	if err := m.signal(ctx, e, rt, syscall.SIGKILL, true); err != nil {
		return fmt.Errorf("stop container %s: SIGKILL: %w", id, err)
	}
	if err := failpoint.Check("StopContainer/kill"); err != nil {
		return err
	}
	killCtx, cancel := context.WithTimeout(ctx, killWait)
	defer cancel()
	soonCtx, cancelSoon := context.WithTimeout(killCtx, killSoon)
	exited := waitExited(soonCtx, e)
	cancelSoon()
	if !exited {
		// The runtime's kill of all by cgroup as well: it also thaws a
		// frozen cgroup (a checkpoint cut short), where a SIGKILL waits,
		// and reaches a process put in the cgroup from outside the
		// container's PID namespace, which the monitor's kill of the init
		// does not.
		if err := rt.Kill(ctx, id, syscall.SIGKILL, true); err != nil && !errdefs.IsNotFound(err) {
			m.log.Warn("runtime kill after the monitor's", "container", id, "err", err)
		}
		exited = waitExited(killCtx, e)
	}
	if !exited {
		// The monitor has not reported: believe the runtime if it says
		// the container is gone, rather than the state machine.
		st, err := rt.State(ctx, id)
		if !errdefs.IsNotFound(err) && (err != nil || st.Status != ociruntime.StatusStopped) {
			return fmt.Errorf("stop container %s: still running %s after SIGKILL: %w", id, killWait, context.DeadlineExceeded)
		}
		m.log.Warn("container gone without its monitor's report", "container", id)
		m.recordExit(e, monitor.Exit{ExitCode: 128 + int(syscall.SIGKILL), ExitedAt: time.Now()})
	}
	m.log.Info("container killed", "container", id)
	return nil
}

// signal sends sig to the init of e's running container, or to all its
// processes. A container that is gone, or whose init exited meanwhile (its
// own exit racing the stop), needs no signal: its exit is then waited for.
func (m *Manager) signal(ctx context.Context, e *entry, rt *ociruntime.Runtime, sig syscall.Signal, all bool) error {
	err := m.signalByMonitor(ctx, e, sig, all)
	if err != nil && !errdefs.IsNotFound(err) {
		err = rt.Kill(ctx, e.c.ID, sig, all)
	}
	if err == nil || errdefs.IsNotFound(err) {
		return nil
	}
	if ctx.Err() != nil {
		return err
	}
	if f := m.fateOf(ctx, e, rt); f.removed || f.ended() {
		return nil
	}
	return err
}

// signalByMonitor has the container's monitor send sig through the pidfd
// it holds of the init, which spares a runtime process (`runc kill` costs
// as much as the rest of a container's teardown, issue #26). The monitor
// serves a signal for the init alone, and a SIGKILL for all the
// container's processes when the init is the init of its own PID
// namespace, which the kernel then ends whole. Any error but
// errdefs.ErrNotFound (the init has exited) leaves the signal to the
// runtime, which kills by cgroup: a container in the pod's or the node's
// PID namespace or another container's, a monitor of an older crib, one
// that is gone or does not answer within monitorSignalTimeout. (A monitor
// that took the request and then stalled past it may have sent it: the
// stop signal can then come twice.)
func (m *Manager) signalByMonitor(ctx context.Context, e *entry, sig syscall.Signal, all bool) error {
	c, err := m.Get(e.c.ID)
	if err != nil {
		return err
	}
	if c.State != Running {
		return fmt.Errorf("signal %v to container %s: not running: %w", sig, c.ID, errdefs.ErrNotImplemented)
	}
	ctx, cancel := context.WithTimeout(ctx, monitorSignalTimeout)
	defer cancel()
	return monitor.SignalInit(ctx, m.socket(c.ID), sig, all)
}

// monitorSignalTimeout bounds a signal request to a monitor, which answers
// at once unless it is stuck.
const monitorSignalTimeout = 5 * time.Second

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
	if err := m.forget([]*entry{e}); err != nil {
		return fmt.Errorf("remove container %s: %w", c.ID, err)
	}
	// Gone, record and all: a retry finds nothing to remove.
	return failpoint.Check("RemoveContainer/record")
}

// forget deletes the records of torn-down containers, whose op locks the
// caller holds, in one transaction, and then drops them from memory and
// releases what they held.
func (m *Manager) forget(es []*entry) error {
	if len(es) == 0 {
		return nil
	}
	// Under each e.record (taken in id order): no update is saving a
	// record while it goes, nor saves it again afterwards (update finds
	// the container unlisted).
	es = slices.SortedFunc(slices.Values(es), func(a, b *entry) int { return strings.Compare(a.c.ID, b.c.ID) })
	ids := make([]string, len(es))
	for i, e := range es {
		e.record.Lock()
		ids[i] = e.c.ID
	}
	unlock := func() {
		for _, e := range es {
			e.record.Unlock()
		}
	}
	if err := m.db.DeleteAll(recordKind, ids); err != nil {
		unlock()
		return err
	}
	cs := make([]Container, len(es))
	m.mu.Lock()
	for i, e := range es {
		cs[i] = e.c
		m.unindex(e.c.SandboxID, e.c.ID)
		m.publish(lifecycle.Deleted, &cs[i])
	}
	m.mu.Unlock()
	unlock()
	for _, c := range cs {
		m.images.Release(c.ChainIDs)
		for _, v := range c.ImageVolumes {
			m.images.Unhold(v.ImageID, c.ID)
		}
		m.names.Release(nameKey(c.SandboxID, c.Config.GetMetadata()), c.ID)
		m.log.Info("container removed", "container", c.ID)
		if m.cfg.Plugins != nil {
			m.cfg.Plugins.RemoveContainer(context.Background(), c)
		}
	}
	return nil
}

// mountDirs are where c's mounts may be: its bundle, and the runtime's
// state directory of it, where runc leaves a bind mount of a copy of its
// own binary when it is killed while it works on the container (delete
// could not remove it).
func (m *Manager) mountDirs(c *Container) []string {
	dirs := []string{m.bundle(c.ID)}
	if rt, err := m.runtime(c.RuntimeHandler); err == nil && rt.Root != "" {
		dirs = append(dirs, filepath.Join(rt.Root, c.ID))
	}
	return dirs
}

// teardown deletes the runtime's container and every file and mount of c,
// whatever state it got to. The caller holds c's op lock (nothing mounts
// under its mountDirs without it). The mounts are found by walking those
// directories, not the node's mount table, which grows with every pod.
func (m *Manager) teardown(ctx context.Context, c *Container) error {
	var errs []error
	rt, rtErr := m.runtime(c.RuntimeHandler)
	unmountErr := mount.UnmountTree(m.mountDirs(c)...)
	// Each step below is done again by a removal retried, or by the
	// rollback at restart, however far this one got.
	if unmountErr == nil {
		if err := failpoint.Check("RemoveContainer/unmount"); err != nil {
			return err
		}
	}
	if rtErr == nil {
		if err := rt.Delete(ctx, c.ID, true); err != nil {
			errs = append(errs, err)
		} else if err := failpoint.Check("RemoveContainer/runtime"); err != nil {
			return err
		}
	}
	// The runtime removes the container's cgroup; one killed while it made
	// it (a start cut short) leaves it, perhaps with a process, and then
	// the pod's cgroup could not go.
	if c.CgroupsPath != "" && !strings.Contains(c.CgroupsPath, ":") {
		h, err := m.hierarchies()
		if err == nil {
			err = h.RemoveTree(c.CgroupsPath)
		}
		if err != nil {
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
// torn down at once. Each is mostly the OCI runtime's own process and the
// kernel's unmount and removal of its files, which wait more than they
// compute: on 2 cores, 8 at once took a 1,000-container teardown from
// 2.9 to 2.6 s against 4 (BenchmarkListContainers).
const teardownConcurrency = 8

// StopInSandbox stops every container of the sandbox, several at once, and
// returns every failure.
func (m *Manager) StopInSandbox(ctx context.Context, sandboxID string, timeout time.Duration) error {
	return m.eachInSandbox(sandboxID, func(id string) error { return m.Stop(ctx, id, timeout) })
}

// RemoveInSandbox removes every container of the sandbox, several at once,
// and returns every failure. It takes all their op locks first (in id
// order, so that two removals of one pod cannot deadlock), so that one
// reading of the mount table serves them all: the kernel writes out every
// mount of the node for each reading, a few milliseconds at a thousand
// containers, which read per container made a node's teardown quadratic.
// The records of those torn down go in one transaction.
func (m *Manager) RemoveInSandbox(ctx context.Context, sandboxID string) error {
	ids := m.idsInSandbox(sandboxID)
	slices.Sort(ids)
	var locked []*entry
	for _, id := range ids {
		e, _, err := m.locked(id)
		if errdefs.IsNotFound(err) {
			continue // removed meanwhile
		}
		if err != nil {
			return fmt.Errorf("remove container %s: %w", id, err)
		}
		defer e.op.Unlock()
		locked = append(locked, e)
	}
	// A container to tear down, as it is once stopped.
	type removal struct {
		e *entry
		c Container
	}
	var (
		mu      sync.Mutex
		errs    []error
		stopped []*removal
	)
	eachConcurrently(locked, func(e *entry) {
		err := m.stop(ctx, e, 0)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("remove container %s: %w", e.c.ID, err))
			return
		}
		c, _ := m.Get(e.c.ID)
		stopped = append(stopped, &removal{e: e, c: c})
	})
	if len(stopped) == 0 {
		return errors.Join(errs...)
	}
	var gone []*entry
	eachConcurrently(stopped, func(r *removal) {
		err := m.teardown(ctx, &r.c)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("remove container %s: %w", r.c.ID, err))
			return
		}
		gone = append(gone, r.e)
	})
	// The containers are torn down, their records not yet deleted: a
	// restart lists them, and their removal is done again.
	if err := failpoint.Check("RemovePodSandbox/containers"); err != nil {
		return errors.Join(append(errs, err)...)
	}
	if err := m.forget(gone); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// idsInSandbox lists the ids of the sandbox's containers, from the
// sandbox's index: its cost is the pod's containers, not the node's.
func (m *Manager) idsInSandbox(sandboxID string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ids := make([]string, 0, len(m.bySandbox[sandboxID]))
	for id := range m.bySandbox[sandboxID] {
		ids = append(ids, id)
	}
	return ids
}

// eachConcurrently calls fn for each of items, at most teardownConcurrency
// at a time, and returns when all calls have.
func eachConcurrently[T any](items []T, fn func(T)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, teardownConcurrency)
	for _, it := range items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(it)
		})
	}
	wg.Wait()
}

// eachInSandbox calls fn for each container of the sandbox, at most
// teardownConcurrency at a time, and joins what they return.
func (m *Manager) eachInSandbox(sandboxID string, fn func(id string) error) error {
	var (
		mu   sync.Mutex
		errs []error
	)
	eachConcurrently(m.idsInSandbox(sandboxID), func(id string) {
		if err := fn(id); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	return errors.Join(errs...)
}
