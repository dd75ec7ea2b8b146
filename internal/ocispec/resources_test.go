package ocispec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestClampOOMScoreAdj(t *testing.T) {
	for _, tt := range []struct {
		v     int64
		floor int
		want  int
	}{
		{-997, 0, 0},
		{-997, -1000, -997},
		{1000, 0, 1000},
		{1500, 0, 1000},
		{-2000, -1500, -1000},
		{100, 200, 200},
		{-999, -500, -500},
	} {
		if got := ClampOOMScoreAdj(tt.v, tt.floor); got != tt.want {
			t.Errorf("ClampOOMScoreAdj(%d, %d) = %d, want %d", tt.v, tt.floor, got, tt.want)
		}
	}
}

func TestUpdateResources(t *testing.T) {
	u64 := func(v uint64) *uint64 { return &v }
	i64 := func(v int64) *int64 { return &v }
	tests := []struct {
		name    string
		in      *runtimeapi.LinuxContainerResources
		hugetlb bool
		want    *specs.LinuxResources
	}{
		{name: "nil", in: nil, want: nil},
		{name: "all zero means unset", in: &runtimeapi.LinuxContainerResources{}, want: &specs.LinuxResources{}},
		{
			name: "cpu and memory",
			in: &runtimeapi.LinuxContainerResources{
				CpuPeriod: 100000, CpuQuota: -1, CpuShares: 1024, MemoryLimitInBytes: 1 << 30,
				OomScoreAdj: -997, CpusetCpus: "1",
			},
			want: &specs.LinuxResources{
				CPU:    &specs.LinuxCPU{Shares: u64(1024), Quota: i64(-1), Period: u64(100000), Cpus: "1"},
				Memory: &specs.LinuxMemory{Limit: i64(1 << 30)},
			},
		},
		{
			name:    "swap, hugepages and unified only",
			hugetlb: true,
			in: &runtimeapi.LinuxContainerResources{
				MemorySwapLimitInBytes: -1,
				HugepageLimits:         []*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 4 << 20}},
				Unified:                map[string]string{"pids.max": "100"},
			},
			want: &specs.LinuxResources{
				Memory:         &specs.LinuxMemory{Swap: i64(-1)},
				HugepageLimits: []specs.LinuxHugepageLimit{{Pagesize: "2MB", Limit: 4 << 20}},
				Unified:        map[string]string{"pids.max": "100"},
			},
		},
		{
			name: "hugepage limits dropped without the hugetlb controller",
			in: &runtimeapi.LinuxContainerResources{
				CpuShares:      2,
				HugepageLimits: []*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 0}, {PageSize: "1GB", Limit: 0}},
			},
			want: &specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: u64(2)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := UpdateResources(tt.in, tt.hugetlb)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildWithoutResourcesLeavesOOMUnset(t *testing.T) {
	f := newFixture(t)
	in := f.input()
	in.Container.Linux.Resources = nil
	spec, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Process.OOMScoreAdj != nil {
		t.Errorf("oomScoreAdj = %d, want unset", *spec.Process.OOMScoreAdj)
	}
	if spec.Linux.Resources == nil || len(spec.Linux.Resources.Devices) != 1 || spec.Linux.Resources.CPU != nil {
		t.Errorf("resources = %+v, want only the deny-all device rule", spec.Linux.Resources)
	}
}
