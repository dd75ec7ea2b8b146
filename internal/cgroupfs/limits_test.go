package cgroupfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crib-dev/crib/internal/systemd"
)

const inf = systemd.Unlimited

func TestSharesToWeight(t *testing.T) {
	tests := []struct{ shares, want uint64 }{
		{0, 0}, {2, 1}, {1, 1}, {1024, 39}, {262144, 10000}, {1 << 20, 10000},
	}
	for _, tt := range tests {
		if got := SharesToWeight(tt.shares); got != tt.want {
			t.Errorf("SharesToWeight(%d) = %d, want %d", tt.shares, got, tt.want)
		}
	}
}

func TestSliceResources(t *testing.T) {
	tests := []struct {
		name string
		l    Limits
		want systemd.Resources
	}{
		{"best effort", Unlimited(MinShares), systemd.Resources{CPUWeight: 1, CPUQuotaPerSecUSec: inf, MemoryMax: inf}},
		{"one cpu, 1Gi", Limits{CPUShares: 1024, CPUQuota: 100000, CPUPeriod: 100000, Memory: 1 << 30},
			systemd.Resources{CPUWeight: 39, CPUQuotaPerSecUSec: 1000000, MemoryMax: 1 << 30}},
		{"max shares", Limits{CPUShares: MaxShares, CPUQuota: -1, CPUPeriod: DefaultPeriod, Memory: -1},
			systemd.Resources{CPUWeight: 10000, CPUQuotaPerSecUSec: inf, MemoryMax: inf}},
		{"no shares is the default weight", Limits{CPUQuota: 250000, CPUPeriod: DefaultPeriod, Memory: 64 << 20},
			systemd.Resources{CPUWeight: DefaultWeight, CPUQuotaPerSecUSec: 2500000, MemoryMax: 64 << 20}},
		{"defaults", Defaults(), systemd.Resources{CPUWeight: 100, CPUQuotaPerSecUSec: inf, MemoryMax: inf}},
		{"minimum quota is 1%", Limits{CPUShares: 2, CPUQuota: 1000, CPUPeriod: DefaultPeriod, Memory: -1},
			systemd.Resources{CPUWeight: 1, CPUQuotaPerSecUSec: 10000, MemoryMax: inf}},
		{"quota rounded up to a percent", Limits{CPUShares: 15, CPUQuota: 1500, CPUPeriod: DefaultPeriod, Memory: -1},
			systemd.Resources{CPUWeight: 1, CPUQuotaPerSecUSec: 20000, MemoryMax: inf}},
		{"other period", Limits{CPUShares: 1024, CPUQuota: 10000, CPUPeriod: 30000, Memory: -1},
			systemd.Resources{CPUWeight: 39, CPUQuotaPerSecUSec: 340000, MemoryMax: inf}},
		{"no period is the default", Limits{CPUShares: 512, CPUQuota: 50000, Memory: -1},
			systemd.Resources{CPUWeight: 20, CPUQuotaPerSecUSec: 500000, MemoryMax: inf}},
		{"huge quota is none", Limits{CPUShares: 2, CPUQuota: 1 << 62, CPUPeriod: DefaultPeriod, Memory: -1},
			systemd.Resources{CPUWeight: 1, CPUQuotaPerSecUSec: inf, MemoryMax: inf}},
		{"zero memory is no limit", Limits{CPUShares: 2, CPUQuota: -1, CPUPeriod: DefaultPeriod},
			systemd.Resources{CPUWeight: 1, CPUQuotaPerSecUSec: inf, MemoryMax: inf}},
	}
	for _, tt := range tests {
		if d := cmp.Diff(tt.want, SliceResources(tt.l)); d != "" {
			t.Errorf("%s: SliceResources(%+v) (-want +got):\n%s", tt.name, tt.l, d)
		}
	}
}

// TestApplyDefaults: a new cgroup's defaults put back cpu.shares 1024 on v1
// and cpu.weight 100 on v2 (not the 39 that 1024 shares convert to), and
// lift the quota and the memory limit. The hierarchies are plain
// directories: only the files written are checked.
func TestApplyDefaults(t *testing.T) {
	read := func(path string) string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	mkdir := func(dirs ...string) {
		t.Helper()
		for _, d := range dirs {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("v2", func(t *testing.T) {
		root := t.TempDir()
		mkdir(filepath.Join(root, "pod"))
		if err := (Hierarchies{Unified: true, Roots: []string{root}}).Apply("pod", Defaults()); err != nil {
			t.Fatal(err)
		}
		for file, want := range map[string]string{"cpu.weight": "100", "cpu.max": "max 100000", "memory.max": "max"} {
			if got := read(filepath.Join(root, "pod", file)); got != want {
				t.Errorf("%s = %q, want %q", file, got, want)
			}
		}
	})
	t.Run("v1", func(t *testing.T) {
		cpu, mem := t.TempDir(), t.TempDir()
		mkdir(filepath.Join(cpu, "pod"), filepath.Join(mem, "pod"))
		for _, f := range []string{filepath.Join(cpu, "cpu.shares"), filepath.Join(mem, "memory.limit_in_bytes")} {
			if err := os.WriteFile(f, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := (Hierarchies{Roots: []string{cpu, mem}}).Apply("pod", Defaults()); err != nil {
			t.Fatal(err)
		}
		for path, want := range map[string]string{
			filepath.Join(cpu, "pod", "cpu.shares"):            "1024",
			filepath.Join(cpu, "pod", "cpu.cfs_quota_us"):      "-1",
			filepath.Join(cpu, "pod", "cpu.cfs_period_us"):     "100000",
			filepath.Join(mem, "pod", "memory.limit_in_bytes"): "-1",
		} {
			if got := read(path); got != want {
				t.Errorf("%s = %q, want %q", path, got, want)
			}
		}
	})
}
