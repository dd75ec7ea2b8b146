package cri

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/stats"
)

const (
	// writableLayerMaxEntries bounds the walk of a writable layer; a
	// larger layer is reported by its first entries.
	writableLayerMaxEntries = 100_000
)

// ContainerStats reports one container's CPU, memory, swap and writable
// layer usage.
func (s *Server) ContainerStats(ctx context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	c, err := s.containers.Get(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	st, err := s.containerStats(ctx, s.statsReader(), c)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStatsResponse{Stats: st}, nil
}

// statsReader reads the host's cgroups as crib's runtimes name them.
func (s *Server) statsReader() *stats.Reader {
	return stats.NewReader(stats.Config{
		Unified: cgroups.Mode() == cgroups.Unified,
		Systemd: s.info.CgroupDriver == "systemd",
	})
}

// containerStats samples c from its cgroup and writable layer, with file
// reads only. Created and running containers have a cgroup (the runtime
// made it at create); exited ones are reported by their writable layer
// alone. A figure that cannot be read is left out; the error says why,
// while the stats returned are as complete as they could be made.
func (s *Server) containerStats(ctx context.Context, r *stats.Reader, c container.Container) (*runtimeapi.ContainerStats, error) {
	st := &runtimeapi.ContainerStats{Attributes: &runtimeapi.ContainerAttributes{
		Id:          c.ID,
		Metadata:    c.Config.GetMetadata(),
		Labels:      c.Config.GetLabels(),
		Annotations: c.Config.GetAnnotations(),
	}}
	paths, err := s.containers.StatsPaths(c)
	if err != nil {
		return st, fmt.Errorf("container %s stats: %w", c.ID, err)
	}
	var errs []error
	if c.State == container.Created || c.State == container.Running {
		smp, err := r.Read(ctx, paths.CgroupsPath)
		switch {
		case errdefs.IsNotFound(err):
			// Exited meanwhile and deleted by the runtime.
		case err != nil:
			errs = append(errs, err)
		default:
			st.Cpu = s.cpuUsage(smp, c.ID)
			st.Memory = memoryUsage(smp)
			st.Swap = swapUsage(smp)
		}
	}
	layer, err := writableLayer(ctx, paths)
	if err != nil {
		errs = append(errs, err)
	}
	st.WritableLayer = layer
	if err := errors.Join(errs...); err != nil {
		return st, fmt.Errorf("container %s stats: %w", c.ID, err)
	}
	return st, nil
}

// writableLayer measures the container's overlay upper dir. A layer
// already removed reads as empty.
func writableLayer(ctx context.Context, paths container.StatsPaths) (*runtimeapi.FilesystemUsage, error) {
	now := time.Now()
	u, err := stats.Disk(ctx, paths.WritableLayer, writableLayerMaxEntries)
	if err != nil && !errdefs.IsNotFound(err) {
		return nil, err
	}
	return &runtimeapi.FilesystemUsage{
		Timestamp:  now.UnixNano(),
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: paths.FsRoot},
		UsedBytes:  &runtimeapi.UInt64Value{Value: u.Bytes},
		InodesUsed: &runtimeapi.UInt64Value{Value: u.Inodes},
	}, nil
}

// cpuUsage is the sample's CPU time, with the rate since the previous
// reading of the same key when there is one.
func (s *Server) cpuUsage(smp stats.Sample, key string) *runtimeapi.CpuUsage {
	if smp.CPU == nil {
		return nil
	}
	u := &runtimeapi.CpuUsage{
		Timestamp:            smp.Time.UnixNano(),
		UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: smp.CPU.UsageNanos},
		Psi:                  psiStats(smp.CPU.Pressure),
	}
	// A first reading has no rate yet; it is left out.
	rate, ok := s.cpuRates.Rate(key, stats.CPUPoint{Time: smp.Time, UsageNanos: smp.CPU.UsageNanos})
	if ok {
		u.UsageNanoCores = &runtimeapi.UInt64Value{Value: rate}
	}
	return u
}

func memoryUsage(smp stats.Sample) *runtimeapi.MemoryUsage {
	m := smp.Memory
	if m == nil {
		return nil
	}
	return &runtimeapi.MemoryUsage{
		Timestamp:       smp.Time.UnixNano(),
		WorkingSetBytes: &runtimeapi.UInt64Value{Value: m.WorkingSet},
		AvailableBytes:  &runtimeapi.UInt64Value{Value: m.Available()},
		UsageBytes:      &runtimeapi.UInt64Value{Value: m.Usage},
		RssBytes:        &runtimeapi.UInt64Value{Value: m.RSS},
		PageFaults:      &runtimeapi.UInt64Value{Value: m.PageFaults},
		MajorPageFaults: &runtimeapi.UInt64Value{Value: m.MajorPageFaults},
		Psi:             psiStats(m.Pressure),
	}
}

// psiStats converts pressure stall information; nil stays nil.
func psiStats(p *stats.Pressure) *runtimeapi.PsiStats {
	if p == nil {
		return nil
	}
	data := func(d stats.PressureData) *runtimeapi.PsiData {
		return &runtimeapi.PsiData{Total: d.TotalNanos, Avg10: d.Avg10, Avg60: d.Avg60, Avg300: d.Avg300}
	}
	return &runtimeapi.PsiStats{Some: data(p.Some), Full: data(p.Full)}
}

func swapUsage(smp stats.Sample) *runtimeapi.SwapUsage {
	sw := smp.Swap
	if sw == nil {
		return nil
	}
	u := &runtimeapi.SwapUsage{
		Timestamp:      smp.Time.UnixNano(),
		SwapUsageBytes: &runtimeapi.UInt64Value{Value: sw.Usage},
	}
	if sw.Limited {
		u.SwapAvailableBytes = &runtimeapi.UInt64Value{Value: sw.Available()}
	}
	return u
}

// forgetGoneRates drops the CPU readings of containers and pods that no
// longer exist.
func (s *Server) forgetGoneRates() {
	s.cpuRates.Keep(func(id string) bool {
		if _, err := s.containers.Get(id); err == nil {
			return true
		}
		_, err := s.sandboxes.Get(id)
		return err == nil
	})
}
