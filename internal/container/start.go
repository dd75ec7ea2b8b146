package container

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/failpoint"
	"github.com/crib-dev/crib/internal/monitor"
	"github.com/crib-dev/crib/internal/mount"
	"github.com/crib-dev/crib/internal/ociruntime"
	"github.com/crib-dev/crib/internal/sandbox"
)

// Start starts a created container.
func (m *Manager) Start(ctx context.Context, id string) error {
	e, c, err := m.locked(id)
	if err != nil {
		return err
	}
	defer e.op.Unlock()
	if c.State != Created {
		return fmt.Errorf("start container %s: state is %s, not created: %w", c.ID, c.State, errdefs.ErrFailedPrecondition)
	}
	if sb, err := m.sandboxes.Get(c.SandboxID); err != nil || sb.State != sandbox.Ready {
		return fmt.Errorf("start container %s: sandbox %s is not ready: %w", c.ID, c.SandboxID, errdefs.ErrFailedPrecondition)
	}
	rt, err := m.runtime(c.RuntimeHandler)
	if err != nil {
		return err
	}
	if m.cfg.Plugins != nil {
		if err := m.cfg.Plugins.StartContainer(ctx, c); err != nil {
			m.startFailed(ctx, e, rt, err)
			m.cfg.Tracer.EndPod(c.SandboxID, err)
			return fmt.Errorf("start container %s: %w", c.ID, err)
		}
	}
	// Taken before the runtime starts it: the container may exit, and its
	// watcher record the exit, before Start returns.
	started := time.Now()
	h, err := m.cfg.Monitors.Start(ctx, m.monitorConfig(c, rt))
	if err == nil {
		err = failpoint.Check("StartContainer/runtime")
	}
	if err == nil && c.RestoreImages != "" {
		err = checkRestoredCgroup(h.ContainerPid, c.CgroupsPath, m.cfg.CgroupDriver == "systemd", m.cfg.CgroupV2)
	}
	m.cfg.Tracer.PodPhase(c.SandboxID, phaseRuntimeStart, time.Since(started))
	if err != nil {
		m.startFailed(ctx, e, rt, err)
		err = fmt.Errorf("start container %s: %w", c.ID, err)
		m.cfg.Tracer.EndPod(c.SandboxID, err)
		return err
	}
	m.cfg.Tracer.EndPod(c.SandboxID, nil)
	// The record of the start is written off the start's path: a daemon
	// that dies before it is written finds at restart a created container
	// whose monitor has started it, and adopts it as running (Restore).
	err = m.updateBehind(e, func(c *Container) {
		c.State = Running
		c.StartedAt = started
		c.Pid = h.ContainerPid
	})
	if err != nil {
		return err
	}
	m.detachHostMounts(c.ID)
	go m.watch(e)
	m.log.Info("container started", "container", c.ID)
	if m.cfg.Plugins != nil {
		running, _ := m.Get(c.ID)
		m.cfg.Plugins.PostStartContainer(ctx, running)
	}
	return nil
}

// detachHostMounts takes a started container's rootfs and image volumes
// out of the host's mount table. The runtime mounted them into the
// container's own mount namespace while it made the container; from then on
// the container holds its copies, and the host's were only the runtime's
// way in: nothing of crib's reads them (checkpoints read the overlay's upper
// dir, stats too), and they would only make the host's table longer, which
// every runtime start copies and reads (issue #26: a flat cost per pod).
// The container's copies go with its mount namespace when it ends. A
// failure is logged: release and teardown unmount what is left, and so does
// the adoption of a running container after a restart.
func (m *Manager) detachHostMounts(id string) {
	if err := mount.UnmountTree(m.hostMountDirs(id)...); err != nil {
		m.log.Warn("detach the started container's host mounts: left to its release", "container", id, "err", err)
	}
}

// hostMountDirs are where a container's mounts are made on the host: its
// rootfs and its image volumes.
func (m *Manager) hostMountDirs(id string) []string {
	b := m.bundle(id)
	return []string{filepath.Join(b, "rootfs"), filepath.Join(b, "volumes")}
}

// monitorConfig is how c's monitor creates and starts it.
func (m *Manager) monitorConfig(c Container, rt *ociruntime.Runtime) monitor.StartConfig {
	return monitor.StartConfig{
		ID:            c.ID,
		Bundle:        m.bundle(c.ID),
		RuntimeBinary: rt.Binary,
		RuntimeRoot:   rt.Root,
		SystemdCgroup: rt.SystemdCgroup,
		Run:           true,
		LogPath:       c.LogPath,
		ExitFile:      m.exitFile(c.ID),
		Socket:        m.socket(c.ID),
		PidFile:       m.pidFile(c.ID),
		MonitorLog:    filepath.Join(m.stateDir(c.ID), "monitor.log"),
		Stdin:         c.Config.GetStdin(),
		StdinOnce:     c.Config.GetStdinOnce(),
		Terminal:      c.Config.GetTty(),
		// A container made from a checkpoint archive is restored rather
		// than started.
		Restore:           c.RestoreImages,
		Criu:              m.cfg.Criu,
		CriuNoBreakpoints: m.cfg.CriuNoBreakpoints,
	}
}

// startFailed records a start that failed the way the kubelet expects to
// see it (exited, reason StartError) and removes what the runtime may have
// left of the container.
func (m *Manager) startFailed(ctx context.Context, e *entry, rt *ociruntime.Runtime, cause error) {
	if err := rt.Delete(context.WithoutCancel(ctx), e.c.ID, true); err != nil {
		m.log.Warn("clean up after a failed start", "container", e.c.ID, "err", err)
	}
	err := m.update(e, func(c *Container) {
		c.State = Exited
		c.FinishedAt = time.Now()
		c.ExitCode = 128
		c.Reason = "StartError"
		c.Message = cause.Error()
	})
	if err != nil {
		m.log.Error("record failed start", "container", e.c.ID, "err", err)
	}
	m.tellStopped(e)
	e.finish()
}

// watch waits for the container's exit through its monitor and records it.
// After a restart it is also how a live container is adopted.
func (m *Manager) watch(e *entry) {
	id := e.c.ID
	exit, err := m.waitMonitor(id)
	select {
	case <-m.closed:
		// The daemon shuts down: the next one reads the exit, if any.
		return
	default:
	}
	if err != nil {
		if errdefs.IsUnavailable(err) {
			m.log.Warn("container monitor gone without an exit record", "container", id, "err", err)
			m.markUnknown(e, err)
			return
		}
		m.log.Error("watch container", "container", id, "err", err)
		m.markUnknown(e, err)
		return
	}
	m.recordExit(e, exit)
}

// waitMonitor blocks until the monitor reports the exit, or reads the exit
// record when the monitor is already gone.
func (m *Manager) waitMonitor(id string) (monitor.Exit, error) {
	if exit, ok, err := monitor.ReadExit(m.exitFile(id)); err != nil || ok {
		return exit, err
	}
	return monitor.WaitExit(m.watching, m.socket(id), m.exitFile(id))
}

func (m *Manager) recordExit(e *entry, exit monitor.Exit) {
	if c, _ := m.Get(e.c.ID); c.State == Exited {
		e.finish()
		return
	}
	err := m.update(e, func(c *Container) {
		c.State = Exited
		c.FinishedAt = exit.ExitedAt
		c.ExitCode = int32(exit.ExitCode)
		c.Pid = 0
		switch {
		case exit.OOMKilled:
			c.Reason = "OOMKilled"
		case exit.ExitCode == 0:
			c.Reason = "Completed"
		default:
			c.Reason = "Error"
		}
	})
	if err != nil {
		m.log.Error("record container exit", "container", e.c.ID, "err", err)
	}
	// Before Stop can return: plugins hear of a stop before the removal.
	m.tellStopped(e)
	e.finish()
	m.log.Info("container exited", "container", e.c.ID, "exit_code", exit.ExitCode)
}

// tellStopped tells the plugins that e's container stopped, on its own or
// by a Stop.
func (m *Manager) tellStopped(e *entry) {
	if m.cfg.Plugins == nil {
		return
	}
	if c, err := m.Get(e.c.ID); err == nil {
		m.cfg.Plugins.StopContainer(context.Background(), c)
	}
}

func (m *Manager) markUnknown(e *entry, cause error) {
	err := m.update(e, func(c *Container) {
		c.State = Unknown
		c.Reason = "Unknown"
		c.Message = cause.Error()
	})
	if err != nil {
		m.log.Error("mark container unknown", "container", e.c.ID, "err", err)
	}
	e.finish()
}
