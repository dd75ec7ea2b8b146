package stats

import (
	"os"
	"path/filepath"
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

func TestCPURate(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "cpu-sample")
	t0 := time.Unix(2000, 0)
	steps := []struct {
		cur    CPUPoint
		want   uint64
		wantOK bool
	}{
		{CPUPoint{t0, 1e9}, 0, false},
		{CPUPoint{t0.Add(time.Second), 1.5e9}, 500e6, true},
		{CPUPoint{t0.Add(3 * time.Second), 5.5e9}, 2e9, true},
	}
	for i, s := range steps {
		got, ok, err := CPURate(file, s.cur)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got != s.want || ok != s.wantOK {
			t.Errorf("step %d: CPURate = %d, %v; want %d, %v", i, got, ok, s.want, s.wantOK)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("dir holds %v (err %v), want only the sample file", entries, err)
	}

	if err := os.WriteFile(file, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := CPURate(file, CPUPoint{t0.Add(time.Hour), 1}); ok || err != nil {
		t.Errorf("CPURate over a malformed file = %v, %v; want no rate and no error", ok, err)
	}
	gone := filepath.Join(dir, "removed", "cpu-sample")
	if _, ok, err := CPURate(gone, CPUPoint{t0, 1}); ok || err != nil {
		t.Errorf("CPURate in a removed dir = %v, %v; want no rate and no error", ok, err)
	}
}
