package cgroupfs

import (
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
		{"no shares leaves the weight", Limits{CPUQuota: 250000, CPUPeriod: DefaultPeriod, Memory: 64 << 20},
			systemd.Resources{CPUQuotaPerSecUSec: 2500000, MemoryMax: 64 << 20}},
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
