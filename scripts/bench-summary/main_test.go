package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkPodStart-2   	      30	 402931105 ns/op	     37300 crib-µs/pod	     20700 runc-µs/run	         1.802 crib/runc	    101700 containerd-µs/pod
BenchmarkPodStart-2   	      30	 402931105 ns/op	     39300 crib-µs/pod	     20700 runc-µs/run	         1.802 crib/runc	    101700 containerd-µs/pod
BenchmarkPodStart-2   	      30	 402931105 ns/op	     50000 crib-µs/pod	     20700 runc-µs/run	         1.802 crib/runc	    101700 containerd-µs/pod
--- BENCH: BenchmarkAgentPodStart/hostnet-2
BenchmarkLogWriter-2   	E1127 01:52:06.793364   25300 remote_runtime.go:1268] "a line on stderr"
      10	 123 ns/op	       459.0 file-MiB/s	       639.0 devnull-MiB/s	         0.7183 file/floor	       500.0 write-only-MiB/s	       280.0 serial-bound-MiB/s
PASS
`

func TestSummary(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := res.value("PodStart", "crib-µs/pod"); v != 39300 {
		t.Errorf("median of three runs: got %v, want 39300", v)
	}
	var out strings.Builder
	if err := write(&out, res); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("want a header and three rows, got:\n%s", out.String())
	}
	for _, want := range []string{"102 ms", "20.7 ms", "39.3 ms", "1.90x floor, 0.39x containerd", "<= 1.3x floor"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("pod start row lacks %q: %s", want, lines[1])
		}
	}
	for _, want := range []string{"639 MiB/s", "459 MiB/s", "0.72x floor"} {
		if !strings.Contains(lines[2], want) {
			t.Errorf("log writer row lacks %q: %s", want, lines[2])
		}
	}
	for _, want := range []string{"280 MiB/s", "459 MiB/s", "1.64x floor"} {
		if !strings.Contains(lines[3], want) {
			t.Errorf("log writer's serial bound row lacks %q: %s", want, lines[3])
		}
	}
}
