package kernelstats

import (
	"context"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestReadV1(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		systemd bool
		path    string
		want    Sample
	}{
		{
			name:  "cgroupfs with swap accounting",
			files: v1Files("/crib/pod/ctr", true),
			path:  "/crib/pod/ctr",
			want: Sample{
				CPU: &CPU{UsageNanos: 123456789, UserNanos: 100000000, SystemNanos: 20000000},
				Memory: &Memory{
					Usage: 150000, WorkingSet: 140000, RSS: 81920, PageFaults: 77, MajorPageFaults: 3,
					Cache: 40960, MappedFile: 512, MaxUsage: 200000, Failcnt: 6, OOMKills: 2,
					Limit: 1048576, Limited: true,
				},
				Swap: &Swap{Usage: 10000, Limit: 2097152, Limited: true},
				Pids: &Pids{Current: 4, Processes: 3},
			},
		},
		{
			name:  "no swap accounting",
			files: v1Files("/crib/pod/ctr", false),
			path:  "crib/pod/ctr",
			want: Sample{
				CPU: &CPU{UsageNanos: 123456789, UserNanos: 100000000, SystemNanos: 20000000},
				Memory: &Memory{
					Usage: 150000, WorkingSet: 140000, RSS: 81920, PageFaults: 77, MajorPageFaults: 3,
					Cache: 40960, MappedFile: 512, MaxUsage: 200000, Failcnt: 6, OOMKills: 2,
					Limit: 1048576, Limited: true,
				},
				Pids: &Pids{Current: 4, Processes: 3},
			},
		},
		{
			name: "unlimited memory",
			files: func() map[string]string {
				f := v1Files("/p/c", false)
				f["memory/p/c/memory.limit_in_bytes"] = "9223372036854771712\n"
				return f
			}(),
			path: "/p/c",
			want: Sample{
				CPU: &CPU{UsageNanos: 123456789, UserNanos: 100000000, SystemNanos: 20000000},
				Memory: &Memory{
					Usage: 150000, WorkingSet: 140000, RSS: 81920, PageFaults: 77, MajorPageFaults: 3,
					Cache: 40960, MappedFile: 512, MaxUsage: 200000, Failcnt: 6, OOMKills: 2,
					Limit: 9223372036854771712,
				},
				Pids: &Pids{Current: 4, Processes: 3},
			},
		},
		{
			name: "only cpuacct",
			files: map[string]string{
				"cpuacct/p/c/cpuacct.usage":        "5\n",
				"cpuacct/p/c/cpuacct.usage_percpu": "5\n",
				"cpuacct/p/c/cpuacct.stat":         "user 0\nsystem 0\n",
			},
			path: "/p/c",
			want: Sample{CPU: &CPU{UsageNanos: 5}},
		},
		{
			name:    "systemd scope",
			files:   v1Files("/kubepods.slice/kubepods-pod1.slice/crib-abc.scope", false),
			systemd: true,
			path:    "kubepods-pod1.slice:crib:abc",
			want: Sample{
				CPU: &CPU{UsageNanos: 123456789, UserNanos: 100000000, SystemNanos: 20000000},
				Memory: &Memory{
					Usage: 150000, WorkingSet: 140000, RSS: 81920, PageFaults: 77, MajorPageFaults: 3,
					Cache: 40960, MappedFile: 512, MaxUsage: 200000, Failcnt: 6, OOMKills: 2,
					Limit: 1048576, Limited: true,
				},
				Pids: &Pids{Current: 4, Processes: 3},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, tt.files)
			r := NewReader(Config{Root: root, Systemd: tt.systemd})
			got, err := r.Read(context.Background(), tt.path)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if got.Time.IsZero() {
				t.Error("sample has no time")
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(Sample{}, "Time")); diff != "" {
				t.Errorf("sample (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadV1Errors(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, v1Files("/p/c", false))
	// A group whose memory.stat is gone mid-way is as good as removed.
	writeTree(t, root, map[string]string{"memory/p/broken/memory.usage_in_bytes": "1\n"})
	r := NewReader(Config{Root: root})
	tests := []struct {
		name  string
		path  string
		check func(error) bool
	}{
		{"missing group", "/p/none", errdefs.IsNotFound},
		{"vanishing files", "/p/broken", errdefs.IsNotFound},
		{"empty path", "", errdefs.IsInvalidArgument},
		{"systemd path without systemd", "a.slice:crib:x", errdefs.IsInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.Read(context.Background(), tt.path)
			if !tt.check(err) {
				t.Errorf("Read(%q) = %v, wrong error class", tt.path, err)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Read(ctx, "/p/c"); err == nil {
		t.Error("Read with a cancelled context succeeded")
	}
}
