package main

import (
	"strings"
	"testing"

	"github.com/crib-dev/crib/internal/api"
)

func TestHumanSize(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0B"}, {999, "999B"}, {1000, "1.0kB"}, {1400000, "1.4MB"}, {56_000_000, "56MB"}, {3_200_000_000, "3.2GB"},
	}
	for _, tt := range tests {
		if got := humanSize(tt.n); got != tt.want {
			t.Errorf("humanSize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestSplitTag(t *testing.T) {
	tests := []struct{ ref, repo, tag string }{
		{"docker.io/library/busybox:latest", "docker.io/library/busybox", "latest"},
		{"127.0.0.1:5000/app:v1", "127.0.0.1:5000/app", "v1"},
		{"127.0.0.1:5000/app", "127.0.0.1:5000/app", "<none>"},
	}
	for _, tt := range tests {
		if repo, tag := splitTag(tt.ref); repo != tt.repo || tag != tt.tag {
			t.Errorf("splitTag(%q) = %q, %q; want %q, %q", tt.ref, repo, tag, tt.repo, tt.tag)
		}
	}
}

func TestBarLine(t *testing.T) {
	half := barLine(api.PullEvent{Layer: "sha256:0123456789abcdef", Done: 500_000, Total: 1_000_000}, 2)
	for _, want := range []string{"0123456789ab ", "[" + strings.Repeat("=", 15) + strings.Repeat(" ", 15) + "]", "500kB/1.0MB", "250kB/s"} {
		if !strings.Contains(half, want) {
			t.Errorf("barLine at half = %q, want it to contain %q", half, want)
		}
	}
	full := barLine(api.PullEvent{Layer: "sha256:0123456789abcdef", Done: 10, Total: 10}, 2)
	if !strings.HasSuffix(full, "10B/10B done") {
		t.Errorf("barLine when done = %q", full)
	}
}

func TestPlainProgress(t *testing.T) {
	var buf strings.Builder
	p := newPlainProgress(&buf)
	l := "sha256:0123456789abcdef"
	for _, done := range []int64{0, 10, 50, 99, 100, 150, 990, 1000, 1000} {
		p.update(api.PullEvent{Layer: l, Done: done, Total: 1000})
	}
	want := "0123456789ab 0B/1.0kB\n" +
		"0123456789ab 100B/1.0kB\n" +
		"0123456789ab 990B/1.0kB\n" +
		"0123456789ab 1.0kB/1.0kB done\n"
	if buf.String() != want {
		t.Errorf("plain progress printed:\n%s\nwant:\n%s", buf.String(), want)
	}
}
