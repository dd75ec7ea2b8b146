// Command bench-summary reads `go test -bench` output on stdin and prints
// one table of the figures of issue #15: containerd, the floor and crib
// side by side, crib's ratio against each, and the goal. scripts/bench.sh
// runs it over its whole output. A figure measured more than once (-count)
// is the median of its runs; a figure whose benchmark did not run is left
// out.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// figure is a row: which benchmark reports it, the units (the metric's
// name) of each side's value in that benchmark's output, and how to show it.
type figure struct {
	name  string
	bench string
	// containerd, floor and crib name the metrics; "" when that side has
	// none.
	containerd, floor, crib string
	// scale turns the metric into unit (µs into ms: 0.001).
	scale float64
	unit  string
	goal  string
}

var figures = []figure{
	{"pod start, host network (RunPodSandbox -> running); floor: bare `runc run -d`", "PodStart",
		"containerd-µs/pod", "runc-µs/run", "crib-µs/pod", 0.001, "ms", "<= 1.3x floor; then below it"},
	{"pod start, CNI bridge", "PodStartNetwork",
		"containerd-cni-µs/pod", "", "crib-cni-µs/pod", 0.001, "ms", "<= 0.5x containerd"},
	{"single pod teardown (StopPodSandbox + RemovePodSandbox), host network, on runc v1.5.2", "PodTeardown",
		"containerd-teardown-µs/pod", "", "crib-teardown-µs/pod", 0.001, "ms", "<= 0.5x containerd"},
	{"the same, pod on a CNI bridge", "PodTeardown",
		"containerd-cni-teardown-µs/pod", "", "crib-cni-teardown-µs/pod", 0.001, "ms", "<= 0.5x containerd"},
	{"runtime memory per 1-container pod (PSS of runtime processes / 50 pods)", "MemoryPerPod",
		"containerd-MiB/pod", "", "crib-MiB/pod", 1, "MiB", "<= 1.5 MiB"},
	{"marginal memory per pod (50 pods minus none, / 50)", "MemoryPerPod",
		"containerd-marginal-MiB/pod", "", "crib-marginal-MiB/pod", 1, "MiB", "<= 0.45 MiB"},
	{"one monitor's PSS; floor: a Go program that only waits", "MemoryPerPod",
		"", "go-floor-MiB/process", "crib-MiB/monitor", 1, "MiB", ""},
	{"50 pods holding 1,000 containers: stop + remove, wall", "ListContainers",
		"containerd-teardown-s", "", "teardown-s", 1, "s", "<= 0.5x containerd"},
	{"ListContainers at 1,000 containers, median; floor: the same answer from an empty gRPC server", "ListContainers",
		"containerd-list-median-µs", "floor-list-median-µs", "list-median-µs", 0.001, "ms", "<= 1 ms"},
	{"ListContainers at 1,000 containers, p99", "ListContainers",
		"containerd-list-p99-µs", "floor-list-p99-µs", "list-p99-µs", 0.001, "ms", "<= 3 ms"},
	{"daemon RSS idle (containerd: + shims)", "ListContainers",
		"containerd-idle-RSS-MiB", "", "daemon-idle-RSS-MiB", 1, "MiB", "<= 25 MiB"},
	{"daemon RSS after 1,000 containers made and removed", "ListContainers",
		"containerd-after-RSS-MiB", "", "daemon-after-RSS-MiB", 1, "MiB", "<= idle + 10 MiB"},
	{"pull + unpack, 3 layers ~51 MiB; floor: remote.Image + untar in process", "PullImage",
		"containerd-MB/s", "floor-MB/s", "crib-MB/s", 1, "MB/s", ">= 1.0x floor"},
	{"container stdout -> CRI log, ~100 MiB of 71-byte lines, end to end", "ContainerLog",
		"containerd-MiB/s", "", "crib-MiB/s", 1, "MiB/s", ""},
	{"CRI log writer in process, 16 MiB of 71-byte lines; floor: to /dev/null", "LogWriter",
		"", "devnull-MiB/s", "file-MiB/s", 1, "MiB/s", ">= 0.8x floor"},
	{"the same; floor: /dev/null's time plus the file's own (the records appended, none formatted)", "LogWriter",
		"", "serial-bound-MiB/s", "file-MiB/s", 1, "MiB/s", ""},
	{"1,000 host-network pods, 8 workers: start, wall; floor: 1,000 bare `runc run -d`", "Scale",
		"containerd-start-s", "runc-start-s", "crib-start-s", 1, "s", "<= 25 s"},
	{"1,000 pods: stop + remove, wall; floor: as many bare runc, run -d / delete --force", "Scale",
		"containerd-teardown-s", "runc-teardown-s", "crib-teardown-s", 1, "s", "<= 20 s"},
	{"1,000 pods: the machine's CPU time per pod start; floor: bare runc", "Scale",
		"containerd-start-cpu-ms/pod", "runc-start-cpu-ms/pod", "crib-start-cpu-ms/pod", 1, "ms", ""},
	{"1,000 pods: the machine's CPU time per pod stop + remove; floor: bare runc", "Scale",
		"containerd-teardown-cpu-ms/pod", "runc-teardown-cpu-ms/pod", "crib-teardown-cpu-ms/pod", 1, "ms", ""},
	{"1,000 pods: memory per pod (PSS of runtime processes / pods)", "Scale",
		"containerd-MiB/pod", "", "crib-MiB/pod", 1, "MiB", "<= 0.5 MiB"},
	{"1,000 pods: daemon RSS idle", "Scale",
		"containerd-idle-RSS-MiB", "", "crib-idle-RSS-MiB", 1, "MiB", ""},
	{"1,000 pods: daemon RSS after cleanup", "Scale",
		"containerd-after-RSS-MiB", "", "crib-after-RSS-MiB", 1, "MiB", "<= idle + 10 MiB"},
}

// results maps a benchmark's name (no "Benchmark", no -GOMAXPROCS) and a
// metric to the values its runs reported.
type results map[string]map[string][]float64

// A result line is a benchmark's name, its iterations, then value-unit
// pairs. go test prints the name when the benchmark starts, so what the
// benchmark writes to stderr meanwhile can put the rest on a line of its
// own.
var (
	benchName = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?(?:\s|$)`)
	benchRest = regexp.MustCompile(`^\s*\d+\s+(\S+ ns/op.*)$`)
)

func parse(r io.Reader) (results, error) {
	res := results{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	name := "" // the benchmark whose results are due
	for sc.Scan() {
		line := sc.Text()
		if m := benchName.FindStringSubmatch(line); m != nil {
			name = m[1]
			line = line[len(m[0]):]
		}
		m := benchRest.FindStringSubmatch(line)
		if m == nil || name == "" {
			continue
		}
		fields := strings.Fields(m[1])
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			if res[name] == nil {
				res[name] = map[string][]float64{}
			}
			res[name][fields[i+1]] = append(res[name][fields[i+1]], v)
		}
		name = ""
	}
	return res, sc.Err()
}

// value is the median of a metric's runs, or false when there is none.
func (res results) value(bench, metric string) (float64, bool) {
	vs := slices.Clone(res[bench][metric])
	if metric == "" || len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2], true
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2, true
}

// number shows three significant digits or so.
func number(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func write(w io.Writer, res results) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "figure\tcontainerd\tfloor\tcrib\tratio (crib / baseline)\tgoal")
	for _, f := range figures {
		crib, ok := res.value(f.bench, f.crib)
		if !ok {
			continue
		}
		cells := []string{f.name, "", "", number(crib*f.scale) + " " + f.unit, "", f.goal}
		var ratios []string
		if v, ok := res.value(f.bench, f.floor); ok {
			cells[2] = number(v*f.scale) + " " + f.unit
			ratios = append(ratios, number(crib/v)+"x floor")
		}
		if v, ok := res.value(f.bench, f.containerd); ok {
			cells[1] = number(v*f.scale) + " " + f.unit
			ratios = append(ratios, number(crib/v)+"x containerd")
		}
		cells[4] = strings.Join(ratios, ", ")
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func main() {
	res, err := parse(os.Stdin)
	if err == nil {
		err = write(os.Stdout, res)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-summary:", err)
		os.Exit(1)
	}
}
