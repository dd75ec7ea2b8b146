package container

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
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
				m.log.Error("roll back container", "container", c.ID, "err", err)
			}
			if err := m.db.Delete(recordKind, c.ID); err != nil {
				return err
			}
			continue
		}
		m.images.Retain(c.ChainIDs)
		e := &entry{c: *c, exited: make(chan struct{})}
		m.byID[c.ID] = e
		m.names.Hold(nameKey(c.SandboxID, c.Config.GetMetadata()), c.ID)
		switch c.State {
		case Created, Running:
			go m.watch(e)
		default:
			close(e.exited)
		}
	}
	return nil
}
