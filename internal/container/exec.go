package container

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/failpoint"
	"github.com/crib-dev/crib/internal/monitor"
	"github.com/crib-dev/crib/internal/ociruntime"
	"github.com/crib-dev/crib/internal/ocispec"
)

// ExecResult is the outcome of ExecSync.
type ExecResult struct {
	Stdout, Stderr []byte
	ExitCode       int32
}

// running returns the entry of a running container.
func (m *Manager) running(id string) (*entry, Container, error) {
	e, err := m.entry(id)
	if err != nil {
		return nil, Container{}, err
	}
	c, _ := m.Get(e.c.ID)
	if c.State != Running {
		return nil, c, fmt.Errorf("container %s is %s, not running: %w", c.ID, c.State, errdefs.ErrFailedPrecondition)
	}
	return e, c, nil
}

// ExecSync runs cmd in a running container and returns its output, each
// stream capped at ociruntime.DefaultExecOutputCap. A timeout of zero means
// none; it counts from the process's start, not the runtime's (as
// containerd's does: a 1 s exec probe must not fail on a slow runc exec),
// and when it fires the process is killed and the error wraps
// context.DeadlineExceeded.
func (m *Manager) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (ExecResult, error) {
	stdout := &ociruntime.CappedBuffer{Cap: ociruntime.DefaultExecOutputCap}
	stderr := &ociruntime.CappedBuffer{Cap: ociruntime.DefaultExecOutputCap}
	code, err := m.Exec(ctx, id, cmd, false, Streams{Stdin: bytes.NewReader(nil), Stdout: stdout, Stderr: stderr, Timeout: timeout})
	if err != nil {
		return ExecResult{}, err
	}
	return ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: int32(code)}, nil
}

func (m *Manager) readSpec(id string) (*specs.Spec, error) {
	data, err := os.ReadFile(filepath.Join(m.bundle(id), "config.json"))
	if err != nil {
		return nil, fmt.Errorf("read OCI spec of %s: %w", id, err)
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("decode OCI spec of %s: %w", id, err)
	}
	return &spec, nil
}

// UpdateResources changes the resources of a created or running container
// and records them, so that status shows the new values. An exited
// container's new resources are only recorded, as containerd does, and so
// are those of a container that exits while the runtime updates it. A
// failure after the new values are in force puts the old ones back; a
// restart in between keeps the new values in force and the old ones in the
// record, which the kubelet, comparing status with what it asked for,
// sends again.
func (m *Manager) UpdateResources(ctx context.Context, id string, res *runtimeapi.LinuxContainerResources) error {
	return m.updateResources(ctx, id, res, m.cfg.Plugins)
}

// UpdateResourcesFromPlugin is UpdateResources of what a plugin asked for:
// the plugins are not told of it again.
func (m *Manager) UpdateResourcesFromPlugin(ctx context.Context, id string, res *runtimeapi.LinuxContainerResources) error {
	return m.updateResources(ctx, id, res, nil)
}

// Spec is the container's OCI spec as its bundle has it.
func (m *Manager) Spec(id string) (*specs.Spec, error) { return m.readSpec(id) }

// updateResources is UpdateResources; plugins, when set, may change res
// first and are told once it is in force.
func (m *Manager) updateResources(ctx context.Context, id string, res *runtimeapi.LinuxContainerResources, plugins Plugins) error {
	e, c, err := m.locked(id)
	if err != nil {
		return err
	}
	defer e.op.Unlock()
	if c.State != Running && c.State != Created && c.State != Exited {
		return fmt.Errorf("update container %s: state is %s: %w", c.ID, c.State, errdefs.ErrFailedPrecondition)
	}
	rt, err := m.runtime(c.RuntimeHandler)
	if err != nil {
		return err
	}
	if res == nil {
		return nil
	}
	if plugins != nil {
		if res, err = plugins.UpdateContainer(ctx, c, res); err != nil {
			return fmt.Errorf("update container %s: %w", c.ID, err)
		}
	}
	undo, err := m.applyResources(ctx, e, rt, c, ocispec.UpdateResources(res, m.cfg.Hugetlb))
	if err != nil {
		return fmt.Errorf("update container %s: %w", c.ID, err)
	}
	err = failpoint.Check("UpdateContainerResources/runtime")
	if err == nil {
		err = m.update(e, func(c *Container) {
			cfg := proto.Clone(c.Config).(*runtimeapi.ContainerConfig)
			if cfg.Linux == nil {
				cfg.Linux = &runtimeapi.LinuxContainerConfig{}
			}
			cfg.Linux.Resources = res
			c.Config = cfg
		})
	}
	if err != nil {
		if uerr := undo(context.WithoutCancel(ctx)); uerr != nil {
			m.log.Error("put back the resources of a failed update", "container", c.ID, "err", uerr)
		}
		return fmt.Errorf("update container %s: %w", c.ID, err)
	}
	if plugins != nil {
		updated, _ := m.Get(c.ID)
		plugins.PostUpdateContainer(ctx, updated)
	}
	return failpoint.Check("UpdateContainerResources/record")
}

// applyResources puts res in force for c and returns how to put back what
// was in force before. A created container is not known to the runtime
// yet: the values go into the spec it will be started from. A running
// one's are those last recorded, or, never updated, its spec's. An exited
// one has nothing in force: its values are only recorded.
func (m *Manager) applyResources(ctx context.Context, e *entry, rt *ociruntime.Runtime, c Container, res *specs.LinuxResources) (func(context.Context) error, error) {
	nothing := func(context.Context) error { return nil }
	if c.State == Exited {
		return nothing, nil
	}
	var old *specs.LinuxResources
	if prev := c.Config.GetLinux().GetResources(); prev != nil && c.State != Created {
		old = ocispec.UpdateResources(prev, m.cfg.Hugetlb)
	} else {
		spec, err := m.readSpec(c.ID)
		if err != nil {
			return nil, err
		}
		if spec.Linux != nil {
			old = spec.Linux.Resources
		}
	}
	if c.State == Created {
		if err := m.updateSpecResources(c.ID, res); err != nil {
			return nil, err
		}
		return func(context.Context) error { return m.setSpecResources(c.ID, old) }, nil
	}
	old = liftUnset(old)
	if err := rt.Update(ctx, c.ID, res); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		if f := m.fateOf(ctx, e, rt); !f.ended() {
			// The runtime may have written some controllers before it
			// failed (cgroup v1 refuses a memory limit below usage after
			// the CPU ones are in): put the old values back.
			if uerr := rt.Update(context.WithoutCancel(ctx), c.ID, old); uerr != nil {
				m.log.Error("put back the resources of a failed update", "container", c.ID, "err", uerr)
			}
			return nil, edgeError(c.ID, err, f)
		}
		// It exited while the runtime updated it: the values are only
		// recorded, as an exited container's are.
		return nothing, nil
	}
	return func(ctx context.Context) error { return rt.Update(ctx, c.ID, old) }, nil
}

// liftUnset is res with no CPU quota or memory limit where it sets none, so
// that putting res back lifts one an update set.
func liftUnset(res *specs.LinuxResources) *specs.LinuxResources {
	out := &specs.LinuxResources{}
	if res != nil {
		*out = *res
	}
	if out.CPU == nil || out.CPU.Quota == nil {
		cpu := specs.LinuxCPU{}
		if out.CPU != nil {
			cpu = *out.CPU
		}
		cpu.Quota = ptrTo(int64(-1))
		out.CPU = &cpu
	}
	if out.Memory == nil || out.Memory.Limit == nil {
		mem := specs.LinuxMemory{}
		if out.Memory != nil {
			mem = *out.Memory
		}
		mem.Limit = ptrTo(int64(-1))
		out.Memory = &mem
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

// updateSpecResources replaces the cgroup resources in c's OCI spec.
func (m *Manager) updateSpecResources(id string, res *specs.LinuxResources) error {
	spec, err := m.readSpec(id)
	if err != nil {
		return err
	}
	if spec.Linux == nil {
		spec.Linux = &specs.Linux{}
	}
	// Device rules are the spec's own, not part of an update.
	if spec.Linux.Resources != nil {
		res.Devices = spec.Linux.Resources.Devices
	}
	spec.Linux.Resources = res
	return writeSpec(m.bundle(id), spec)
}

// setSpecResources puts res, whole, in c's OCI spec.
func (m *Manager) setSpecResources(id string, res *specs.LinuxResources) error {
	spec, err := m.readSpec(id)
	if err != nil {
		return err
	}
	if spec.Linux == nil {
		spec.Linux = &specs.Linux{}
	}
	spec.Linux.Resources = res
	return writeSpec(m.bundle(id), spec)
}

// ReopenLog makes the container's monitor reopen its log file, after the
// kubelet renamed it for rotation.
func (m *Manager) ReopenLog(ctx context.Context, id string) error {
	e, c, err := m.running(id)
	if err != nil {
		return err
	}
	client, err := monitor.Dial(ctx, m.socket(c.ID))
	if err == nil {
		err = client.ReopenLog(ctx)
	}
	if err != nil {
		return fmt.Errorf("reopen log of %s: %w", c.ID, m.monitorError(ctx, e, c, err))
	}
	return nil
}
