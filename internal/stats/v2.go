package stats

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
	m, err := mgr.StatFiltered(cgroup2.StatCPU | cgroup2.StatMemory | cgroup2.StatPids)
	if err != nil {
		return Sample{}, err
	}
	has := func(file string) bool {
		_, err := os.Stat(filepath.Join(dir, file))
		return err == nil
	}
	var s Sample
	if m.CPU != nil && has("cpu.stat") {
		s.CPU = &CPU{UsageNanos: m.CPU.UsageUsec * 1000, Pressure: pressure(m.CPU.PSI)}
	}
	if m.Pids != nil && has("pids.current") {
		s.Pids = &Pids{Current: m.Pids.Current}
	}
	if mem := m.Memory; mem != nil && has("memory.current") {
		s.Memory = &Memory{
			Usage:           mem.Usage,
			WorkingSet:      workingSet(mem.Usage, mem.InactiveFile),
			RSS:             mem.Anon,
			PageFaults:      mem.Pgfault,
			MajorPageFaults: mem.Pgmajfault,
			Limit:           mem.UsageLimit,
			Limited:         limited(mem.UsageLimit),
			Pressure:        pressure(mem.PSI),
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
