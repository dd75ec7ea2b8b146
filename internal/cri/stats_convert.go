package cri

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/kernelstats"
	"github.com/crib-dev/crib/internal/statsservice"
)

// cpuUsage is the cgroup's CPU time, with its rate when there is one (a
// first reading has none; it is left out).
func cpuUsage(cg *statsservice.Cgroup) *runtimeapi.CpuUsage {
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

func memoryUsage(smp kernelstats.Sample) *runtimeapi.MemoryUsage {
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
func psiStats(p *kernelstats.Pressure) *runtimeapi.PsiStats {
	if p == nil {
		return nil
	}
	data := func(d kernelstats.PressureData) *runtimeapi.PsiData {
		return &runtimeapi.PsiData{Total: d.TotalNanos, Avg10: d.Avg10, Avg60: d.Avg60, Avg300: d.Avg300}
	}
	return &runtimeapi.PsiStats{Some: data(p.Some), Full: data(p.Full)}
}

// ioUsage is the cgroup's block I/O pressure; nil where the kernel keeps
// none for the cgroup (cgroup v1), as for CPU and memory pressure.
func ioUsage(smp kernelstats.Sample) *runtimeapi.IoUsage {
	if smp.IO == nil || smp.IO.Pressure == nil {
		return nil
	}
	return &runtimeapi.IoUsage{Timestamp: smp.Time.UnixNano(), Psi: psiStats(smp.IO.Pressure)}
}

func swapUsage(smp kernelstats.Sample) *runtimeapi.SwapUsage {
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

func processUsage(smp kernelstats.Sample) *runtimeapi.ProcessUsage {
	if smp.Pids == nil {
		return nil
	}
	return &runtimeapi.ProcessUsage{
		Timestamp:    smp.Time.UnixNano(),
		ProcessCount: &runtimeapi.UInt64Value{Value: smp.Pids.Current},
	}
}

// networkUsage reports a pod's interfaces, eth0 (the CNI's interface) as
// the default one, or the first when there is no eth0; nil stays nil.
func networkUsage(n *kernelstats.Network) *runtimeapi.NetworkUsage {
	if n == nil || len(n.Interfaces) == 0 {
		return nil
	}
	u := &runtimeapi.NetworkUsage{Timestamp: n.Time.UnixNano()}
	for _, i := range n.Interfaces {
		iu := &runtimeapi.NetworkInterfaceUsage{
			Name:     i.Name,
			RxBytes:  &runtimeapi.UInt64Value{Value: i.RxBytes},
			RxErrors: &runtimeapi.UInt64Value{Value: i.RxErrors},
			TxBytes:  &runtimeapi.UInt64Value{Value: i.TxBytes},
			TxErrors: &runtimeapi.UInt64Value{Value: i.TxErrors},
		}
		if i.Name == "eth0" || u.DefaultInterface == nil {
			u.DefaultInterface = iu
		}
		u.Interfaces = append(u.Interfaces, iu)
	}
	return u
}
