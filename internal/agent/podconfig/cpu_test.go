package podconfig

import "testing"

func TestMilliCPUToShares(t *testing.T) {
	tests := []struct {
		name  string
		milli int64
		want  int64
	}{
		{"no request is the minimum, not the kernel's 1024", 0, 2},
		{"negative is no request", -5, 2},
		{"below the minimum is raised to it", 1, 2},
		{"the smallest request above the minimum", 3, 3},
		{"one CPU", 1000, 1024},
		{"rounded down", 1500, 1536},
		{"a tenth of a CPU", 100, 102},
		{"the maximum", 256000, 262144},
		{"beyond the maximum is capped", 1000000, 262144},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MilliCPUToShares(tt.milli); got != tt.want {
				t.Errorf("MilliCPUToShares(%d) = %d, want %d", tt.milli, got, tt.want)
			}
		})
	}
}

func TestMilliCPUToQuota(t *testing.T) {
	tests := []struct {
		name          string
		milli, period int64
		want          int64
	}{
		{"no limit is no quota (0, as the kubelet and the CRI say)", 0, QuotaPeriod, 0},
		{"negative is no limit", -1, QuotaPeriod, 0},
		{"below 1 ms is raised to the kernel's minimum", 1, QuotaPeriod, 1000},
		{"exactly the minimum", 10, QuotaPeriod, 1000},
		{"one CPU is one period", 1000, QuotaPeriod, 100000},
		{"one and a half CPUs", 1500, QuotaPeriod, 150000},
		{"scaled to another period", 500, 50000, 25000},
		{"the minimum holds for a short period", 10, 50000, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MilliCPUToQuota(tt.milli, tt.period); got != tt.want {
				t.Errorf("MilliCPUToQuota(%d, %d) = %d, want %d", tt.milli, tt.period, got, tt.want)
			}
		})
	}
}
