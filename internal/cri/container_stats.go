package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/statsservice"
)

// ContainerStats reports one container's CPU, memory, swap, I/O pressure
// and writable layer usage.
func (s *Server) ContainerStats(ctx context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	c, err := s.containers.Get(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	u, err := s.usage.Container(ctx, c)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStatsResponse{Stats: containerStats(c, u)}, nil
}

// containerStats describes c with its usage u; figures u lacks are left
// out.
func containerStats(c container.Container, u statsservice.Container) *runtimeapi.ContainerStats {
	st := &runtimeapi.ContainerStats{Attributes: &runtimeapi.ContainerAttributes{
		Id:          c.ID,
		Metadata:    c.Config.GetMetadata(),
		Labels:      c.Config.GetLabels(),
		Annotations: c.Config.GetAnnotations(),
	}}
	if cg := u.Cgroup; cg != nil {
		st.Cpu = cpuUsage(cg)
		st.Memory = memoryUsage(cg.Sample)
		st.Swap = swapUsage(cg.Sample)
		st.Io = ioUsage(cg.Sample)
	}
	if l := u.Layer; l != nil {
		st.WritableLayer = &runtimeapi.FilesystemUsage{
			Timestamp:  l.Time.UnixNano(),
			FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: l.Mountpoint},
			UsedBytes:  &runtimeapi.UInt64Value{Value: l.Bytes},
			InodesUsed: &runtimeapi.UInt64Value{Value: l.Inodes},
		}
	}
	return st
}
