package crivalidate

import (
	"fmt"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/cgroupfs"
)

// Resources checks container or pod resources the way the kernel would
// take them, naming the field: nothing negative but the "no limit" -1
// where the kernel has one, a CFS period and quota in the kernel's range,
// shares within cpu.shares' range, an OOM score adjustment within
// -1000..1000, cgroup file names that stay in the cgroup.
func Resources(field string, r *runtimeapi.LinuxContainerResources) error {
	if r == nil {
		return nil
	}
	bad := func(name string, v int64, why string) error {
		return Invalid(field+"."+name, "%d: %s", v, why)
	}
	switch p := r.GetCpuPeriod(); {
	case p < 0:
		return bad("cpu_period", p, "negative")
	case p > 0 && (p < 1000 || p > 1000000):
		return bad("cpu_period", p, "the kernel takes 1000 to 1000000 microseconds")
	}
	switch q := r.GetCpuQuota(); {
	case q < -1:
		return bad("cpu_quota", q, "only -1 (no quota) may be negative")
	case q > 0 && q < 1000:
		return bad("cpu_quota", q, "the kernel's minimum is 1000 microseconds")
	}
	if s := r.GetCpuShares(); s < 0 || s > cgroupfs.MaxShares {
		return bad("cpu_shares", s, fmt.Sprintf("cpu.shares takes 0 to %d", cgroupfs.MaxShares))
	}
	if v := r.GetMemoryLimitInBytes(); v < 0 {
		return bad("memory_limit_in_bytes", v, "negative")
	}
	if v := r.GetMemorySwapLimitInBytes(); v < -1 {
		return bad("memory_swap_limit_in_bytes", v, "only -1 (no limit) may be negative")
	}
	if v := r.GetOomScoreAdj(); v < -1000 || v > 1000 {
		return bad("oom_score_adj", v, "the kernel takes -1000 to 1000")
	}
	if err := String(field+".cpuset_cpus", r.GetCpusetCpus(), MaxPathLen); err != nil {
		return err
	}
	if err := String(field+".cpuset_mems", r.GetCpusetMems(), MaxPathLen); err != nil {
		return err
	}
	if n := len(r.GetHugepageLimits()); n > MaxStrings {
		return Invalid(field+".hugepage_limits", "%d items, more than %d", n, MaxStrings)
	}
	for i, h := range r.GetHugepageLimits() {
		f := fmt.Sprintf("%s.hugepage_limits[%d].page_size", field, i)
		if h.GetPageSize() == "" {
			return Invalid(f, "is empty")
		}
		if err := String(f, h.GetPageSize(), 64); err != nil {
			return err
		}
	}
	if n := len(r.GetUnified()); n > MaxStrings {
		return Invalid(field+".unified", "%d items, more than %d", n, MaxStrings)
	}
	for k, v := range r.GetUnified() {
		if k == "" || strings.ContainsAny(k, "/\x00") || k == "." || k == ".." || len(k) > 255 {
			return Invalid(field+".unified", "key %q is not a cgroup file name", k)
		}
		if err := String(fmt.Sprintf("%s.unified[%q]", field, k), v, maxSysctlValue); err != nil {
			return err
		}
	}
	return nil
}
