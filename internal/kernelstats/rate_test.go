package kernelstats

import (
	"testing"
	"time"
)

func TestNanoCores(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name      string
		prev, cur CPUPoint
		want      uint64
		wantOK    bool
	}{
		{"no previous", CPUPoint{}, CPUPoint{Time: t0, UsageNanos: 5}, 0, false},
		{"one core busy", CPUPoint{t0, 1e9}, CPUPoint{t0.Add(2 * time.Second), 3e9}, 1e9, true},
		{"quarter core", CPUPoint{t0, 0}, CPUPoint{t0.Add(time.Second), 250e6}, 250e6, true},
		{"idle", CPUPoint{t0, 7}, CPUPoint{t0.Add(time.Second), 7}, 0, true},
		{"time stood still", CPUPoint{t0, 1}, CPUPoint{t0, 2}, 0, false},
		{"counter reset", CPUPoint{t0, 100}, CPUPoint{t0.Add(time.Second), 50}, 0, false},
	}
	for _, tt := range tests {
		got, ok := NanoCores(tt.prev, tt.cur)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("%s: NanoCores = %d, %v; want %d, %v", tt.name, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestRates(t *testing.T) {
	var r Rates
	t0 := time.Unix(2000, 0)
	steps := []struct {
		key    string
		cur    CPUPoint
		want   uint64
		wantOK bool
	}{
		{"a", CPUPoint{t0, 1e9}, 0, false},
		{"b", CPUPoint{t0, 7}, 0, false},
		{"a", CPUPoint{t0.Add(time.Second), 1.5e9}, 500e6, true},
		{"a", CPUPoint{t0.Add(3 * time.Second), 5.5e9}, 2e9, true},
		{"b", CPUPoint{t0.Add(time.Second), 7}, 0, true},
	}
	for i, s := range steps {
		got, ok := r.Rate(s.key, s.cur)
		if got != s.want || ok != s.wantOK {
			t.Errorf("step %d: Rate(%s) = %d, %v; want %d, %v", i, s.key, got, ok, s.want, s.wantOK)
		}
	}
	r.Keep(func(k string) bool { return k == "a" })
	if _, ok := r.Rate("b", CPUPoint{t0.Add(time.Hour), 8}); ok {
		t.Error("Rate of a forgotten key has a previous point")
	}
	if _, ok := r.Rate("a", CPUPoint{t0.Add(time.Hour), 6e9}); !ok {
		t.Error("Rate of a kept key lost its previous point")
	}
}
