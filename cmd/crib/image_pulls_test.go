package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crib-dev/crib/internal/api"
)

func TestWritePulls(t *testing.T) {
	now := time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)
	pulls := []api.PullInfo{
		{Ref: "docker.io/library/nginx:1.27", Started: now.Add(-12 * time.Second), Waiters: 2, Done: 3_500_000, Total: 14_000_000, Layers: []api.LayerProgress{
			{Digest: "sha256:0123456789abcdef", Done: 2_000_000, Total: 2_000_000},
			{Digest: "sha256:fedcba9876543210", Done: 1_500_000, Total: 12_000_000},
		}},
		{Ref: "registry.k8s.io/pause:3.10", Started: now.Add(-time.Second), Waiters: 1, Layers: []api.LayerProgress{}},
	}
	for _, tc := range []struct {
		name   string
		layers bool
		want   string
	}{
		{name: "pulls", want: `IMAGE                          PROGRESS   BYTES        LAYERS   WAITERS   AGE
docker.io/library/nginx:1.27   25%        3.5MB/14MB   1/2      2         12s
registry.k8s.io/pause:3.10     -          -            0/0      1         1s
`},
		{name: "layers", layers: true, want: `IMAGE                          PROGRESS   BYTES         LAYERS   WAITERS   AGE
docker.io/library/nginx:1.27   25%        3.5MB/14MB    1/2      2         12s
  0123456789ab                 100%       2.0MB/2.0MB
  fedcba987654                 12%        1.5MB/12MB
registry.k8s.io/pause:3.10     -          -             0/0      1         1s
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := writePulls(&out, pulls, tc.layers, now); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("table (-want +got):\n%s", diff)
			}
		})
	}
}
