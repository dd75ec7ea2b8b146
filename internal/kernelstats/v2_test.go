package kernelstats

import (
	"context"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func v2Files(group string) map[string]string {
	g := group[1:] + "/"
	return map[string]string{
		g + "cgroup.controllers":  "cpu memory pids\n",
		g + "cpu.stat":            "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\nnr_periods 10\nnr_throttled 2\nthrottled_usec 300\n",
		g + "cpu.max":             "max 100000\n",
		g + "memory.stat":         "anon 8192\nfile 4096\nfile_mapped 2048\ninactive_file 1000\npgfault 12\npgmajfault 1\n",
		g + "memory.current":      "20000\n",
		g + "memory.peak":         "30000\n",
		g + "memory.events":       "low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\n",
		g + "cgroup.procs":        "1\n2\n",
		g + "child/cgroup.procs":  "3\n",
		g + "memory.max":          "max\n",
		g + "memory.swap.current": "300\n",
		g + "memory.swap.max":     "1000\n",
		g + "pids.current":        "2\n",
		g + "pids.max":            "100\n",
	}
}

func TestReadV2(t *testing.T) {
	throttled := &Throttling{Periods: 10, ThrottledPeriods: 2, ThrottledNanos: 300000}
	tests := []struct {
		name    string
		files   map[string]string
		path    string
		systemd bool
		want    Sample
	}{
		{
			name: "all controllers, pressure",
			files: func() map[string]string {
				f := v2Files("/crib/pod/ctr")
				f["crib/pod/ctr/cpu.pressure"] = "some avg10=1.50 avg60=0.75 avg300=0.25 total=4000\nfull avg10=0.50 avg60=0.00 avg300=0.00 total=1000\n"
				f["crib/pod/ctr/memory.pressure"] = "some avg10=0.00 avg60=0.00 avg300=0.00 total=7\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=3\n"
				f["crib/pod/ctr/io.pressure"] = "some avg10=0.00 avg60=0.00 avg300=0.00 total=20\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=10\n"
				return f
			}(),
			path: "/crib/pod/ctr",
			want: Sample{
				CPU: &CPU{UsageNanos: 2500000, UserNanos: 2000000, SystemNanos: 500000, Throttling: throttled, Pressure: &Pressure{
					Some: PressureData{TotalNanos: 4000000, Avg10: 1.5, Avg60: 0.75, Avg300: 0.25},
					Full: PressureData{TotalNanos: 1000000, Avg10: 0.5},
				}},
				Memory: &Memory{
					Usage: 20000, WorkingSet: 19000, RSS: 8192, PageFaults: 12, MajorPageFaults: 1,
					Limit: 1<<64 - 1,
					Cache: 4096, MappedFile: 2048, MaxUsage: 30000, Failcnt: 5, OOMKills: 1,
					Pressure: &Pressure{Some: PressureData{TotalNanos: 7000}, Full: PressureData{TotalNanos: 3000}},
				},
				Swap: &Swap{Usage: 300, Limit: 1000, Limited: true},
				Pids: &Pids{Current: 2, Processes: 3, Limit: 100, Limited: true},
				IO:   &IO{Pressure: &Pressure{Some: PressureData{TotalNanos: 20000}, Full: PressureData{TotalNanos: 10000}}},
			},
		},
		{
			name: "memory limit, no swap, no pids",
			files: func() map[string]string {
				f := v2Files("/a/b")
				f["a/b/memory.max"] = "50000\n"
				// Without the cpu controller there is no throttling.
				delete(f, "a/b/cpu.max")
				delete(f, "a/b/memory.swap.current")
				delete(f, "a/b/memory.swap.max")
				delete(f, "a/b/pids.current")
				delete(f, "a/b/pids.max")
				return f
			}(),
			path: "/a/b",
			want: Sample{
				CPU: &CPU{UsageNanos: 2500000, UserNanos: 2000000, SystemNanos: 500000},
				Memory: &Memory{
					Usage: 20000, WorkingSet: 19000, RSS: 8192, PageFaults: 12, MajorPageFaults: 1,
					Limit: 50000, Limited: true,
					Cache: 4096, MappedFile: 2048, MaxUsage: 30000, Failcnt: 5, OOMKills: 1,
				},
			},
		},
		{
			name:    "systemd pod slice",
			files:   v2Files("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod9.slice"),
			path:    "kubepods-burstable-pod9.slice",
			systemd: true,
			want: Sample{
				CPU: &CPU{UsageNanos: 2500000, UserNanos: 2000000, SystemNanos: 500000, Throttling: throttled},
				Memory: &Memory{
					Usage: 20000, WorkingSet: 19000, RSS: 8192, PageFaults: 12, MajorPageFaults: 1,
					Limit: 1<<64 - 1,
					Cache: 4096, MappedFile: 2048, MaxUsage: 30000, Failcnt: 5, OOMKills: 1,
				},
				Swap: &Swap{Usage: 300, Limit: 1000, Limited: true},
				Pids: &Pids{Current: 2, Processes: 3, Limit: 100, Limited: true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, tt.files)
			r := NewReader(Config{Root: root, Unified: true, Systemd: tt.systemd})
			got, err := r.Read(context.Background(), tt.path)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(Sample{}, "Time")); diff != "" {
				t.Errorf("sample (-want +got):\n%s", diff)
			}
			if got.Memory.Available() != 0 && !got.Memory.Limited {
				t.Errorf("unlimited memory has %d available", got.Memory.Available())
			}
		})
	}
}

func TestReadV2Missing(t *testing.T) {
	r := NewReader(Config{Root: t.TempDir(), Unified: true})
	if _, err := r.Read(context.Background(), "/nope"); !errdefs.IsNotFound(err) {
		t.Errorf("Read of a missing group = %v, want not found", err)
	}
}
