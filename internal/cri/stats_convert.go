package cri

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/stats"
	"github.com/crib-dev/crib/internal/usage"
)

// cpuUsage is the cgroup's CPU time, with its rate when there is one (a
// first reading has none; it is left out).
func cpuUsage(cg *usage.Cgroup) *runtimeapi.CpuUsage {
	if cg.CPU == nil {
		return nil
	}
	u := &runtimeapi.CpuUsage{
		Timestamp:            cg.Time.UnixNano(),
		UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: cg.CPU.UsageNanos},
		Psi:                  psiStats(cg.CPU.Pressure),
	}
	if cg.HasRate {
		u.UsageNanoCores = &runtimeapi.UInt64Value{Value: cg.NanoCores}
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

func processUsage(smp stats.Sample) *runtimeapi.ProcessUsage {
	if smp.Pids == nil {
		return nil
	}
	return &runtimeapi.ProcessUsage{
		Timestamp:    smp.Time.UnixNano(),
		ProcessCount: &runtimeapi.UInt64Value{Value: smp.Pids.Current},
	}
}
