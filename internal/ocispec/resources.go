package ocispec

import (
	"maps"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// resources fills linux.resources (cpu, memory, hugepages, unified) and the
// process's oom_score_adj from the CRI container resources. CRI v1 has no
// pids limit per container; the kubelet puts it on the pod cgroup.
func (b *builder) resources() error {
	r := b.in.Container.GetLinux().GetResources()
	if r == nil {
		return nil
	}
	conv := convertResources(r, b.in.Hugetlb)
	res := b.resourcesStruct()
	res.CPU, res.Memory, res.HugepageLimits, res.Unified = conv.CPU, conv.Memory, conv.HugepageLimits, conv.Unified
	b.spec.Process.OOMScoreAdj = ptr(ClampOOMScoreAdj(r.GetOomScoreAdj(), b.in.OOMScoreAdjMin))
	return nil
}

// resourcesStruct returns linux.resources, creating it when absent.
func (b *builder) resourcesStruct() *specs.LinuxResources {
	if b.spec.Linux.Resources == nil {
		b.spec.Linux.Resources = &specs.LinuxResources{}
	}
	return b.spec.Linux.Resources
}

// UpdateResources converts CRI resources for UpdateContainerResources (runc
// update). It is the conversion Build uses, so a created and an updated
// container agree; hugetlb is Input.Hugetlb. oom_score_adj is not a cgroup
// resource and is left out; use ClampOOMScoreAdj for it. A nil r gives nil.
func UpdateResources(r *runtimeapi.LinuxContainerResources, hugetlb bool) *specs.LinuxResources {
	if r == nil {
		return nil
	}
	return convertResources(r, hugetlb)
}

// convertResources maps CRI resources to OCI ones; zero CRI values mean
// "not set" and stay nil. Hugepage limits are kept only with hugetlb.
func convertResources(r *runtimeapi.LinuxContainerResources, hugetlb bool) *specs.LinuxResources {
	out := &specs.LinuxResources{}
	cpu := &specs.LinuxCPU{}
	if v := r.GetCpuShares(); v > 0 {
		cpu.Shares = ptr(uint64(v))
	}
	if v := r.GetCpuQuota(); v != 0 {
		cpu.Quota = ptr(v)
	}
	if v := r.GetCpuPeriod(); v > 0 {
		cpu.Period = ptr(uint64(v))
	}
	cpu.Cpus = r.GetCpusetCpus()
	cpu.Mems = r.GetCpusetMems()
	if *cpu != (specs.LinuxCPU{}) {
		out.CPU = cpu
	}
	mem := &specs.LinuxMemory{}
	if v := r.GetMemoryLimitInBytes(); v > 0 {
		mem.Limit = ptr(v)
	}
	if v := r.GetMemorySwapLimitInBytes(); v != 0 {
		mem.Swap = ptr(v)
	}
	if mem.Limit != nil || mem.Swap != nil {
		out.Memory = mem
	}
	for _, h := range r.GetHugepageLimits() {
		if !hugetlb {
			break
		}
		out.HugepageLimits = append(out.HugepageLimits, specs.LinuxHugepageLimit{Pagesize: h.GetPageSize(), Limit: h.GetLimit()})
	}
	if len(r.GetUnified()) > 0 {
		out.Unified = maps.Clone(r.GetUnified())
	}
	return out
}

// ClampOOMScoreAdj bounds a CRI oom_score_adj to what the daemon may set:
// not below floor (nor -1000) and not above 1000.
func ClampOOMScoreAdj(v int64, floor int) int {
	lo := int64(max(floor, -1000))
	return int(max(lo, min(v, 1000)))
}
