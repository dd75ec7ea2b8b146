package sandbox

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/cgroupfs"
)

func TestPodLimits(t *testing.T) {
	const mi = 1 << 20
	tests := []struct {
		name               string
		overhead, resource *runtimeapi.LinuxContainerResources
		want               cgroupfs.Limits
	}{
		{"nothing: minimum shares, no limit", nil, nil,
			cgroupfs.Limits{CPUShares: 2, CPUQuota: -1, CPUPeriod: 100000, Memory: -1}},
		{"resources alone", nil,
			&runtimeapi.LinuxContainerResources{CpuShares: 512, CpuQuota: 50000, CpuPeriod: 100000, MemoryLimitInBytes: 64 * mi},
			cgroupfs.Limits{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, Memory: 64 * mi}},
		{"overhead added",
			&runtimeapi.LinuxContainerResources{CpuShares: 102, CpuQuota: 10000, CpuPeriod: 100000, MemoryLimitInBytes: 16 * mi},
			&runtimeapi.LinuxContainerResources{CpuShares: 512, CpuQuota: 50000, CpuPeriod: 100000, MemoryLimitInBytes: 64 * mi},
			cgroupfs.Limits{CPUShares: 614, CPUQuota: 60000, CPUPeriod: 100000, Memory: 80 * mi}},
		{"overhead quota scaled to the pod's period",
			&runtimeapi.LinuxContainerResources{CpuQuota: 5000, CpuPeriod: 50000},
			&runtimeapi.LinuxContainerResources{CpuQuota: 20000, CpuPeriod: 100000},
			cgroupfs.Limits{CPUShares: 2, CPUQuota: 30000, CPUPeriod: 100000, Memory: -1}},
		{"overhead alone limits nothing",
			&runtimeapi.LinuxContainerResources{CpuShares: 100, CpuQuota: 10000, MemoryLimitInBytes: 16 * mi},
			&runtimeapi.LinuxContainerResources{CpuShares: 512},
			cgroupfs.Limits{CPUShares: 612, CPUQuota: -1, CPUPeriod: 100000, Memory: -1}},
	}
	for _, tt := range tests {
		if d := cmp.Diff(tt.want, podLimits(tt.overhead, tt.resource)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
}
