package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/reclaim"
	"github.com/crib-dev/crib/internal/testutil"
)

// scaleWorkers start and remove BenchmarkScale's pods, as many at a time.
const scaleWorkers = 8

// scalePods is how many one-container pods BenchmarkScale runs at once:
// 1,000, or CRIB_BENCH_SCALE_PODS.
func scalePods(b *testing.B) int {
	s := os.Getenv("CRIB_BENCH_SCALE_PODS")
	if s == "" {
		return 1000
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("CRIB_BENCH_SCALE_PODS=%q: want a number of pods", s)
	}
	return n
}

// scaleNetwork is the namespaces of BenchmarkScale's pods and the CNI
// network crib gives them: the host's network, or with
// CRIB_BENCH_SCALE_NETWORK=cni a network of each pod's own on a bridge with
// the baseline's plugins and options, on a /22 (containerd-up.sh's is one
// too) so that 1,000 pods have addresses.
func scaleNetwork(b *testing.B) (*runtimeapi.NamespaceOption, string) {
	switch v := os.Getenv("CRIB_BENCH_SCALE_NETWORK"); v {
	case "", "host":
		return hostNetwork, ""
	case "cni":
		ns := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER}
		return ns, strings.ReplaceAll(baselineConfList, "{{.Subnet}}", "10.204.0.0/22")
	default:
		b.Fatalf("CRIB_BENCH_SCALE_NETWORK=%q: want host or cni", v)
		return nil, ""
	}
}

// BenchmarkScale runs 1,000 (CRIB_BENCH_SCALE_PODS) host-network (or CNI:
// CRIB_BENCH_SCALE_NETWORK) pods of one sleeping busybox each
// on crib, 8 at a time, then stops and removes them 8 at a time; then the
// same on the baseline containerd when it runs. It reports each side's
// wall time of both, the runtime's memory per pod while the pods run (PSS
// of crib's daemon and monitors, or of containerd and its shims, over the
// pods), and the resident memory of crib's daemon (or of containerd) idle
// and after the pods are gone; and the floor of both wall times, as many
// bare runc containers (runcScale). For each side it also reports the
// machine's CPU time per pod while pods start and while they go, and the
// mounts each pod adds to the host's mount namespace. It takes minutes
// (containerd's side the most): scripts/bench.sh runs it with SCALE=1,
// once (-benchtime 1x). The bare runc floor, on the host's network, is
// measured only for host-network pods.
func BenchmarkScale(b *testing.B) {
	testutil.RequiresRoot(b)
	requireRegistry(b)
	img := registryBusybox
	ns, confList := scaleNetwork(b)
	d := testutil.StartDaemon(b, testutil.Options{Image: &img, LogLevel: "warn", CNIConfList: confList})
	ctx := context.Background()
	monitor := testutil.MonitorBinary(d.Binary)
	cribSide := scaleSide{
		rt: d.Runtime,
		procs: func() []int {
			return append([]int{d.Pid()}, pidsWhere(func(exe, _ string) bool { return exe == monitor })...)
		},
		rss: func() float64 { return rssMiB(b, d.Pid()) },
		ns:  ns,
	}
	// Each side has run one pod before its idle memory is read, so that
	// idle is a daemon that has served a pod (the code a pod's life runs
	// paged in), not one just started: about 1.7 MiB of crib's binary.
	removePod(ctx, b, d.Runtime, startPodWith(ctx, b, d.Runtime, img.Ref, "scale-warm", ns))
	var ctrdSide *scaleSide
	if c := dialBaseline(b); c != nil {
		c.pull(ctx, b, img.Ref)
		removePod(ctx, b, c.Runtime, startPodWith(ctx, b, c.Runtime, img.Ref, "scale-warm", ns))
		ctrdSide = &scaleSide{rt: c.Runtime, procs: func() []int { return c.procs(b) }, rss: func() float64 { return c.rssMiB(b) }, ns: ns}
	}

	pods := scalePods(b)
	bundle := runcBundle(b, d, img.Ref)
	var crib, ctrd scaleFigures
	var runc scaleFigures
	b.ResetTimer()
	for range b.N {
		crib.add(cribSide.measure(ctx, b, img.Ref, pods))
		if ctrdSide != nil {
			ctrd.add(ctrdSide.measure(ctx, b, img.Ref, pods))
		}
		if ns == hostNetwork {
			var f scaleFigures
			f.start, f.teardown, f.startCPU, f.teardownCPU = runcScale(b, bundle, pods)
			runc.add(f)
		}
	}
	b.StopTimer()
	crib.report(b, "crib", float64(b.N))
	n := float64(b.N)
	if ns == hostNetwork {
		b.ReportMetric(runc.start.Seconds()/n, "runc-start-s")
		b.ReportMetric(runc.teardown.Seconds()/n, "runc-teardown-s")
		b.ReportMetric(float64(runc.startCPU.Milliseconds())/n/float64(pods), "runc-start-cpu-ms/pod")
		b.ReportMetric(float64(runc.teardownCPU.Milliseconds())/n/float64(pods), "runc-teardown-cpu-ms/pod")
	}
	if ctrdSide != nil {
		ctrd.report(b, "containerd", float64(b.N))
		b.ReportMetric(crib.start.Seconds()/ctrd.start.Seconds(), "start-crib/containerd")
		b.ReportMetric(crib.teardown.Seconds()/ctrd.teardown.Seconds(), "teardown-crib/containerd")
		b.ReportMetric(crib.perPod/ctrd.perPod, "memory-crib/containerd")
	}
}

// scaleSide is one runtime of BenchmarkScale: its CRI, the processes whose
// memory it is charged with, and its daemon's resident memory.
type scaleSide struct {
	rt    runtimeapi.RuntimeServiceClient
	procs func() []int
	rss   func() float64
	// ns are the namespaces of its pods.
	ns *runtimeapi.NamespaceOption
}

// scaleFigures are what one side measured, summed over iterations.
type scaleFigures struct {
	start, teardown, startCPU, teardownCPU time.Duration
	perPod, idle, afterRSS, mounts         float64
	// curve is the mean start of a pod (RunPodSandbox to its container
	// started, ms) by the pods already held, and teardownCurve that of
	// its stop and remove, at the points of curvePoints.
	curve, teardownCurve map[int]float64
}

func (f *scaleFigures) add(g scaleFigures) {
	f.start += g.start
	f.teardown += g.teardown
	f.startCPU += g.startCPU
	f.teardownCPU += g.teardownCPU
	f.mounts += g.mounts
	f.perPod += g.perPod
	f.idle += g.idle
	f.afterRSS += g.afterRSS
	for _, c := range []struct {
		into *map[int]float64
		from map[int]float64
	}{{&f.curve, g.curve}, {&f.teardownCurve, g.teardownCurve}} {
		if *c.into == nil {
			*c.into = map[int]float64{}
		}
		for k, v := range c.from {
			(*c.into)[k] += v
		}
	}
}

// curveWindow is how many pods each point of a curve averages over.
const curveWindow = 50

// curvePoints are the pods held at which the curves are reported: 0, 200,
// 500 and 1,000 where there are that many, and always the last window.
func curvePoints(pods int) []int {
	var points []int
	for _, p := range []int{0, 200, 500, 1000} {
		if p+curveWindow <= pods {
			points = append(points, p)
		}
	}
	if last := max(pods-curveWindow, 0); len(points) == 0 || points[len(points)-1] != last {
		points = append(points, last)
	}
	return points
}

// curve is the mean of took (each pod's time, by the order the pods were
// handed out) over the window at each of curvePoints, in ms. With 8
// workers the i-th pod starts with about i pods held.
func curve(took []time.Duration) map[int]float64 {
	out := map[int]float64{}
	for _, p := range curvePoints(len(took)) {
		var sum time.Duration
		end := min(p+curveWindow, len(took))
		for _, d := range took[p:end] {
			sum += d
		}
		out[p] = float64(sum.Microseconds()) / 1000 / float64(end-p)
	}
	return out
}

func (f *scaleFigures) report(b *testing.B, side string, n float64) {
	b.ReportMetric(f.start.Seconds()/n, side+"-start-s")
	b.ReportMetric(f.teardown.Seconds()/n, side+"-teardown-s")
	b.ReportMetric(f.perPod/n, side+"-MiB/pod")
	b.ReportMetric(f.idle/n, side+"-idle-RSS-MiB")
	b.ReportMetric(f.afterRSS/n, side+"-after-RSS-MiB")
	pods := float64(scalePods(b))
	b.ReportMetric(float64(f.startCPU.Milliseconds())/n/pods, side+"-start-cpu-ms/pod")
	b.ReportMetric(float64(f.teardownCPU.Milliseconds())/n/pods, side+"-teardown-cpu-ms/pod")
	b.ReportMetric(f.mounts/n, side+"-host-mounts/pod")
	points := curvePoints(int(pods))
	for _, p := range points {
		b.ReportMetric(f.curve[p]/n, fmt.Sprintf("%s-start-ms@%d", side, p))
	}
	// The teardown of pod i happens with about pods-i held.
	for _, p := range points {
		b.ReportMetric(f.teardownCurve[p]/n, fmt.Sprintf("%s-teardown-ms@%d", side, int(pods)-p))
	}
	if first := f.curve[points[0]]; first > 0 {
		b.ReportMetric(f.curve[points[len(points)-1]]/first, side+"-start-last/first")
	}
}

func (s scaleSide) measure(ctx context.Context, b *testing.B, image string, pods int) scaleFigures {
	b.Helper()
	settle(b)
	var f scaleFigures
	f.idle = s.rss()
	ids := make([]string, pods)
	took := make([]time.Duration, pods)
	mounts := mountCount(b)
	hold(b, "start")
	cpu := machineCPU(b)
	start := time.Now()
	err := eachAtOnce(pods, func(i int) error {
		pod, ctr := podConfigs(image, fmt.Sprintf("scale-%d", i), s.ns)
		began := time.Now()
		id, err := runPod(ctx, s.rt, pod, ctr)
		took[i] = time.Since(began)
		ids[i] = id
		return err
	})
	f.start = time.Since(start)
	f.startCPU = machineCPU(b) - cpu
	f.mounts = float64(mountCount(b)-mounts) / float64(pods)
	f.curve = curve(took)
	if err != nil {
		// containerd's pods have no harness to remove them.
		for _, id := range ids {
			if id != "" {
				_ = stopAndRemove(ctx, s.rt, id)
			}
		}
		b.Fatal(err)
	}
	hold(b, "held")
	settle(b)
	f.perPod = pssMiB(b, s.procs()) / float64(pods)
	cpu = machineCPU(b)
	start = time.Now()
	if err := eachAtOnce(pods, func(i int) error {
		began := time.Now()
		err := stopAndRemove(ctx, s.rt, ids[i])
		took[i] = time.Since(began)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	f.teardown = time.Since(start)
	f.teardownCurve = curve(took)
	f.teardownCPU = machineCPU(b) - cpu
	// crib's daemon hands the heap the removals freed back to the kernel
	// once they pause for reclaim.Quiet; containerd does nothing then.
	time.Sleep(4 * reclaim.Quiet)
	f.afterRSS = s.rss()
	hold(b, "gone")
	return f
}

// machineCPU is the CPU time the whole machine has spent busy since boot
// (user, nice, system, irq and softirq of /proc/stat): a scale run's
// share of it tells how much work each pod took, whichever process did
// it.
func machineCPU(b *testing.B) time.Duration {
	b.Helper()
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line) // cpu user nice system idle iowait irq softirq ...
	if len(fields) < 8 || fields[0] != "cpu" {
		b.Fatalf("/proc/stat: unexpected first line %q", line)
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} {
		n, err := strconv.ParseInt(fields[i], 10, 64)
		if err != nil {
			b.Fatalf("/proc/stat: %q: %v", line, err)
		}
		ticks += n
	}
	// USER_HZ is 100 on every Linux architecture Go supports.
	return time.Duration(ticks) * 10 * time.Millisecond
}

// mountCount is how many mounts the host's mount namespace holds.
func mountCount(b *testing.B) int {
	b.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		b.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// runcScale is the floor of BenchmarkScale: as many bare `runc run -d` of
// runc's default spec as there are pods, 8 at a time, then as many `runc
// delete --force`. It returns the wall time of each, then the machine's
// CPU time during each.
func runcScale(b *testing.B, bundle string, n int) (start, teardown, startCPU, teardownCPU time.Duration) {
	b.Helper()
	settle(b)
	root := b.TempDir()
	runc := func(args ...string) error {
		// The detached container inherits runc's stdio: a pipe would
		// never close, so runc's errors go to a file.
		errFile, err := os.CreateTemp(b.TempDir(), "runc-stderr")
		if err != nil {
			return err
		}
		defer errFile.Close()
		cmd := exec.Command("runc", append([]string{"--root", root}, args...)...)
		cmd.Stderr = errFile
		if err := cmd.Run(); err != nil {
			out, _ := os.ReadFile(errFile.Name())
			return fmt.Errorf("runc %s: %v: %s", args[0], err, out)
		}
		return nil
	}
	cpu := machineCPU(b)
	began := time.Now()
	err := eachAtOnce(n, func(i int) error { return runc("run", "-d", "--bundle", bundle, fmt.Sprintf("scale-%d", i)) })
	start = time.Since(began)
	startCPU = machineCPU(b) - cpu
	settle(b)
	cpu = machineCPU(b)
	began = time.Now()
	derr := eachAtOnce(n, func(i int) error { return runc("delete", "--force", fmt.Sprintf("scale-%d", i)) })
	teardown = time.Since(began)
	teardownCPU = machineCPU(b) - cpu
	if err != nil || derr != nil {
		b.Fatalf("bare runc: %v; delete: %v", err, derr)
	}
	return start, teardown, startCPU, teardownCPU
}

// eachAtOnce calls do(0) ... do(n-1) from scaleWorkers goroutines and
// returns the first error; after one, the workers take no new index.
func eachAtOnce(n int, do func(i int) error) error {
	next := make(chan int)
	var mu sync.Mutex
	var first error
	failed := func() bool { mu.Lock(); defer mu.Unlock(); return first != nil }
	var wg sync.WaitGroup
	for range scaleWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n && !failed(); i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// hold pauses a scale run at the point named (start: before the pods
// start; held: with them running, before they go; gone: after they went
// and the daemon's resident memory was read) when
// CRIB_BENCH_SCALE_HOLD names a path, for profiling or tracing the daemon,
// its monitors and runc at that density: it makes the file PATH.point and
// goes on once that file is removed.
func hold(b *testing.B, point string) {
	b.Helper()
	path := os.Getenv("CRIB_BENCH_SCALE_HOLD")
	if path == "" {
		return
	}
	path += "." + point
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	for {
		if _, err := os.Stat(path); err != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
