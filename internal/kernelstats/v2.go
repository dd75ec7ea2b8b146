package kernelstats

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/containerd/cgroups/v3/cgroup2"
	cgstats "github.com/containerd/cgroups/v3/cgroup2/stats"
	"github.com/containerd/errdefs"
)

// readV2 samples group in the unified hierarchy at root. Controllers not
// enabled for the group have no files there and are left out.
func readV2(root, group string) (Sample, error) {
	dir := filepath.Join(root, group)
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Sample{}, errdefs.ErrNotFound
		}
		return Sample{}, err
	}
	mgr, err := cgroup2.Load(group, cgroup2.WithMountpoint(root))
	if err != nil {
		return Sample{}, fmt.Errorf("load: %w", err)
	}
	m, err := mgr.StatFiltered(cgroup2.StatCPU | cgroup2.StatMemory | cgroup2.StatMemoryEvents | cgroup2.StatPids | cgroup2.StatIO)
	if err != nil {
		return Sample{}, err
	}
	has := func(file string) bool {
		_, err := os.Stat(filepath.Join(dir, file))
		return err == nil
	}
	var s Sample
	if m.CPU != nil && has("cpu.stat") {
		c := m.CPU
		s.CPU = &CPU{
			UsageNanos:  c.UsageUsec * 1000,
			UserNanos:   c.UserUsec * 1000,
			SystemNanos: c.SystemUsec * 1000,
			Pressure:    pressure(c.PSI),
		}
		// cpu.stat has the nr_* lines only where the cpu controller is on.
		if has("cpu.max") {
			s.CPU.Throttling = &Throttling{Periods: c.NrPeriods, ThrottledPeriods: c.NrThrottled, ThrottledNanos: c.ThrottledUsec * 1000}
		}
	}
	if m.Pids != nil && has("pids.current") {
		procs, err := countProcesses(dir)
		if err != nil {
			return Sample{}, err
		}
		s.Pids = &Pids{Current: m.Pids.Current, Processes: procs, Limit: m.Pids.Limit, Limited: has("pids.max") && limited(m.Pids.Limit)}
	}
	if m.Io != nil && m.Io.PSI != nil {
		s.IO = &IO{Pressure: pressure(m.Io.PSI)}
	}
	if mem := m.Memory; mem != nil && has("memory.current") {
		s.Memory = &Memory{
			Usage:           mem.Usage,
			WorkingSet:      workingSet(mem.Usage, mem.InactiveFile),
			RSS:             mem.Anon,
			Cache:           mem.File,
			MappedFile:      mem.FileMapped,
			MaxUsage:        mem.MaxUsage,
			PageFaults:      mem.Pgfault,
			MajorPageFaults: mem.Pgmajfault,
			Limit:           mem.UsageLimit,
			Limited:         limited(mem.UsageLimit),
			Pressure:        pressure(mem.PSI),
		}
		if ev := m.MemoryEvents; ev != nil {
			s.Memory.Failcnt, s.Memory.OOMKills = ev.Max, ev.OomKill
		}
		if has("memory.swap.current") {
			s.Swap = &Swap{Usage: mem.SwapUsage, Limit: mem.SwapLimit, Limited: limited(mem.SwapLimit)}
		}
	}
	return s, nil
}

// pressure converts the PSI of a *.pressure file; its totals are in
// microseconds.
func pressure(p *cgstats.PSIStats) *Pressure {
	if p == nil || p.Some == nil {
		return nil
	}
	data := func(d *cgstats.PSIData) PressureData {
		if d == nil {
			return PressureData{}
		}
		return PressureData{TotalNanos: d.Total * 1000, Avg10: d.Avg10, Avg60: d.Avg60, Avg300: d.Avg300}
	}
	return &Pressure{Some: data(p.Some), Full: data(p.Full)}
}
