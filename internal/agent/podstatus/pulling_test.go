package podstatus

import "testing"

func TestPullingMessage(t *testing.T) {
	for _, tc := range []struct {
		name        string
		done, total int64
		known       bool
		want, pct   string
	}{
		{name: "runtime tells", done: 12_345_678, total: 29_100_000, known: true,
			want: `Pulling image "busybox:1.36" (42%: 12.3 of 29.1 MB)`, pct: "42%"},
		{name: "done", done: 5, total: 5, known: true, want: `Pulling image "busybox:1.36" (100%: 0.0 of 0.0 MB)`, pct: "100%"},
		{name: "runtime does not tell", want: `Pulling image "busybox:1.36"`},
		{name: "size not known yet", known: true, want: `Pulling image "busybox:1.36"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PullingMessage("busybox:1.36", tc.done, tc.total, tc.known)
			if got != tc.want {
				t.Errorf("message %q, want %q", got, tc.want)
			}
			pct, ok := PullPercent(got)
			if pct != tc.pct || ok != (tc.pct != "") {
				t.Errorf("percent of %q = %q, %v; want %q", got, pct, ok, tc.pct)
			}
		})
	}
	for _, msg := range []string{`Back-off pulling image "x" (10s left)`, `Failed to pull image "a (b)"`, ""} {
		if pct, ok := PullPercent(msg); ok {
			t.Errorf("percent of %q = %q, want none", msg, pct)
		}
	}
}
