package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// memoryPods is how many pods BenchmarkMemoryPerPod runs.
const memoryPods = 50

// MemoryContainersEnv sets BenchmarkMemoryPerPod's containers per pod
// (default 1; issue #26 asks for 1 and 3).
const MemoryContainersEnv = "CRIB_BENCH_MEMORY_CONTAINERS"

// BenchmarkMemoryPerPod runs 50 host-network pods of one (or
// $CRIB_BENCH_MEMORY_CONTAINERS) sleeping busybox container each on crib and, when it runs, on the baseline containerd,
// and reports what the runtime's processes use then, in PSS (shared pages
// divided among the processes sharing them): crib's daemon and monitors,
// containerd and its shims. Per pod is that total over the pods; marginal
// is its growth from no pod to 50, over 50. Each iteration measures anew.
// The floor of a Go monitor is measured too (goFloorMiB).
func BenchmarkMemoryPerPod(b *testing.B) {
	testutil.RequiresRoot(b)
	requireRegistry(b)
	img := registryBusybox
	d := testutil.StartDaemon(b, testutil.Options{Image: &img, LogLevel: "warn"})
	ctx := context.Background()
	perPod := 1
	if v := os.Getenv(MemoryContainersEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want a number of containers, 1 or more", MemoryContainersEnv, v)
		}
		perPod = n
	}
	startPod := func(rt runtimeapi.RuntimeServiceClient, uid string) string {
		id := startPodWith(ctx, b, rt, img.Ref, uid, hostNetwork)
		for i := 1; i < perPod; i++ {
			addContainer(ctx, b, rt, id, img.Ref, uid, fmt.Sprintf("sleep-%d", i), hostNetwork)
		}
		return id
	}
	monitor := testutil.MonitorBinary(d.Binary)
	cribProcs := func() []int {
		return append([]int{d.Pid()}, pidsWhere(func(exe, _ string) bool { return exe == monitor })...)
	}
	var ctrd runtimeapi.RuntimeServiceClient
	var ctrdProcs func() []int
	if c := dialBaseline(b); c != nil {
		c.pull(ctx, b, img.Ref)
		ctrd, ctrdProcs = c.Runtime, func() []int { return c.procs(b) }
		removePod(ctx, b, ctrd, startPodWith(ctx, b, ctrd, img.Ref, "mem-warm", hostNetwork))
	}

	type sample struct{ idle, loaded, monitor float64 }
	measure := func(rt runtimeapi.RuntimeServiceClient, procs func() []int, perPod func() float64) sample {
		settle(b)
		idle := pssMiB(b, procs())
		ids := make([]string, memoryPods)
		for i := range ids {
			ids[i] = startPod(rt, fmt.Sprintf("mem-%d", i))
		}
		settle(b)
		s := sample{idle: idle, loaded: pssMiB(b, procs())}
		if perPod != nil {
			s.monitor = perPod()
		}
		for _, id := range ids {
			removePod(ctx, b, rt, id)
		}
		return s
	}
	var crib, base sample
	b.ResetTimer()
	for range b.N {
		s := measure(d.Runtime, cribProcs, func() float64 {
			mons := pidsWhere(func(exe, _ string) bool { return exe == monitor })
			return pssMiB(b, mons) / float64(len(mons))
		})
		crib.idle, crib.loaded, crib.monitor = crib.idle+s.idle, crib.loaded+s.loaded, crib.monitor+s.monitor
		if ctrd != nil {
			s := measure(ctrd, ctrdProcs, nil)
			base.idle, base.loaded = base.idle+s.idle, base.loaded+s.loaded
		}
	}
	b.StopTimer()
	b.ReportMetric(goFloorMiB(b), "go-floor-MiB/process")
	n := float64(b.N)
	b.ReportMetric(float64(perPod), "containers/pod")
	b.ReportMetric(crib.loaded/n/memoryPods, "crib-MiB/pod")
	b.ReportMetric((crib.loaded-crib.idle)/n/memoryPods, "crib-marginal-MiB/pod")
	b.ReportMetric(crib.monitor/n, "crib-MiB/monitor")
	b.ReportMetric(crib.idle/n, "crib-idle-MiB")
	if ctrd != nil {
		b.ReportMetric(base.loaded/n/memoryPods, "containerd-MiB/pod")
		b.ReportMetric((base.loaded-base.idle)/n/memoryPods, "containerd-marginal-MiB/pod")
		b.ReportMetric(crib.loaded/base.loaded, "crib/containerd")
	}
}

// goFloorSource is the least a Go process that waits can be: the
// runtime, one goroutine blocked on a signal, nothing else.
const goFloorSource = `package main

import (
	"os"
	"os/signal"
	"runtime"
	"syscall"
)

func init() { runtime.MemProfileRate = 0 }

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	<-c
}
`

// goFloorMiB builds goFloorSource as crib-monitor is built (static, the
// same toolchain), runs 50 copies and returns their PSS over 50: what each
// monitor would cost if it were a Go program doing nothing, the floor of
// crib's marginal memory per pod while the monitor is written in Go.
func goFloorMiB(b *testing.B) float64 {
	b.Helper()
	dir := b.TempDir()
	src, bin := filepath.Join(dir, "main.go"), filepath.Join(dir, "gofloor")
	if err := os.WriteFile(src, []byte(goFloorSource), 0o644); err != nil {
		b.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", bin, src)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build the Go floor: %v: %s", err, out)
	}
	var pids []int
	defer func() {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			syscall.Wait4(pid, &ws, 0, nil)
		}
	}()
	for range memoryPods {
		cmd := exec.Command(bin)
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		pids = append(pids, cmd.Process.Pid)
	}
	settle(b)
	return pssMiB(b, pids) / memoryPods
}

// pidsWhere lists the processes whose executable and command line (NULs
// as spaces) match.
func pidsWhere(match func(exe, cmdline string) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if match(exe, string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// pssMiB sums the proportional set size of pids.
func pssMiB(b *testing.B, pids []int) float64 {
	b.Helper()
	var kib int
	for _, pid := range pids {
		f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
		if err != nil {
			b.Fatalf("memory of pid %d: %v", pid, err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "Pss:"); ok {
				v, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
				if err != nil {
					b.Fatalf("pid %d: Pss %q: %v", pid, rest, err)
				}
				kib += v
			}
		}
		f.Close()
	}
	return float64(kib) / 1024
}

// rssMiB is the resident set of pid (VmRSS).
func rssMiB(b *testing.B, pid int) float64 {
	b.Helper()
	return float64(testutil.ProcStatus(b, pid, "VmRSS")) / 1024
}
