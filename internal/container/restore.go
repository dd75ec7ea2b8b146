package container

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/monitor"
)

// Restore loads the containers recorded on disk: creations the daemon died
// in are rolled back, live containers are adopted through their monitors,
// exits that happened while the daemon was down are read from the monitors'
// exit records.
func (m *Manager) Restore(ctx context.Context) error {
	var loaded []*Container
	err := m.db.ForEach(recordKind, []int{recordVersion}, func(id string, decode func(any) error) error {
		var r record
		if err := decode(&r); err != nil {
			m.log.Error("skip unreadable container record", "container", id, "err", err)
			return nil
		}
		c := r.Container
		c.Config = &runtimeapi.ContainerConfig{}
		if err := proto.Unmarshal(r.Config, c.Config); err != nil {
			m.log.Error("skip unreadable container record", "container", id, "err", err)
			return nil
		}
		loaded = append(loaded, &c)
		return nil
	})
	if err != nil {
		return fmt.Errorf("restore containers: %w", err)
	}
	for _, c := range loaded {
		if c.State == Creating {
			m.log.Info("roll back container creation interrupted by a restart", "container", c.ID)
			if err := m.teardown(ctx, c); err != nil {
				// The record stays for the next start to try again.
				m.log.Error("roll back container", "container", c.ID, "err", err)
				continue
			}
			if err := m.db.Delete(recordKind, c.ID); err != nil {
				return err
			}
			continue
		}
		m.images.Retain(c.ChainIDs)
		for _, v := range c.ImageVolumes {
			if err := m.images.Hold(v.ImageID, c.ID); err != nil {
				// Only an image removed behind the daemon's back can be
				// gone: the container's mount still works until it goes.
				m.log.Error("hold image volume", "container", c.ID, "image", v.ImageID, "err", err)
			}
		}
		e := &entry{c: *c, exited: make(chan struct{})}
		m.index(e)
		m.names.Hold(nameKey(c.SandboxID, c.Config.GetMetadata()), c.ID)
		switch {
		case c.State == Running:
			// A daemon that died inside Start may have left them.
			m.detachHostMounts(c.ID)
			go m.watch(e)
		case c.State == Created && m.startedUnrecorded(ctx, c.ID):
			// The daemon died inside Start, after the monitor had
			// started the container: adopt it as running, with the pid
			// the runtime wrote (Start would have recorded it; without it
			// the status shows no pid and a pod sharing the container's
			// PID namespace cannot join it). With no pid file the monitor
			// died early, and the watch finds that out.
			pid, err := monitor.ReadPidFile(m.pidFile(c.ID))
			if err != nil {
				m.log.Warn("container started at restart has no pid", "container", c.ID, "err", err)
			}
			if err := m.update(e, func(c *Container) { c.State = Running; c.StartedAt = time.Now(); c.Pid = pid }); err != nil {
				return err
			}
			m.detachHostMounts(c.ID)
			go m.watch(e)
		case c.State == Created:
		default:
			e.finish()
		}
	}
	return nil
}

// startedUnrecorded reports whether a container recorded as created has
// been started: it has an exit record, or a monitor whose runtime wrote the
// container's pid file. Only Start makes a monitor, but the monitor listens
// before the runtime has made the container: while its socket is there
// without a pid file, the start is still under way (the daemon died inside
// it), and this waits for its outcome, up to monitorStartWait. A monitor
// whose start failed removes its socket; one that died leaves it, but no
// longer answers.
func (m *Manager) startedUnrecorded(ctx context.Context, id string) bool {
	pidFile := m.pidFile(id)
	deadline := time.Now().Add(monitorStartWait)
	for {
		if _, ok, _ := monitor.ReadExit(m.exitFile(id)); ok {
			return true
		}
		if _, err := os.Stat(m.socket(id)); err != nil {
			// The monitor went since the look above: it may have written
			// the exit meanwhile.
			_, exited, _ := monitor.ReadExit(m.exitFile(id))
			return exited
		}
		if _, err := os.Stat(pidFile); err == nil {
			return true
		}
		if _, err := monitor.Dial(ctx, m.socket(id)); err != nil {
			// The monitor died too: nothing will finish the start, and
			// the watch of an adopted container finds out what is left.
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			m.log.Warn("container start under way at restart did not finish; taken as started", "container", id, "waited", monitorStartWait)
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// monitorStartWait bounds how long a restart waits for a start it
// interrupted: the runtime's create and start take well under a second.
const monitorStartWait = 30 * time.Second
