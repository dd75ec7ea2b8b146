package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// memoryPods is how many one-container pods BenchmarkMemoryPerPod runs.
const memoryPods = 50

// BenchmarkMemoryPerPod runs 50 host-network pods of one sleeping busybox
// container each on crib and, when it runs, on the baseline containerd,
// and reports what the runtime's processes use then, in PSS (shared pages
// divided among the processes sharing them): crib's daemon and monitors,
// containerd and its shims. Per pod is that total over the pods; marginal
// is its growth from no pod to 50, over 50. Each iteration measures anew.
func BenchmarkMemoryPerPod(b *testing.B) {
	testutil.RequiresRoot(b)
	img := testutil.Busybox(b)
	d := testutil.StartDaemon(b, testutil.Options{Image: &img, LogLevel: "warn"})
	ctx := context.Background()
	host := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_CONTAINER}
	monitor := testutil.MonitorBinary(d.Binary)
	cribProcs := func() []int {
		return append([]int{d.Pid()}, pidsWhere(func(exe, _ string) bool { return exe == monitor })...)
	}

	var ctrd runtimeapi.RuntimeServiceClient
	ctrdSock := containerdEndpoint()
	// containerd by the pid file containerd-up.sh writes beside its
	// socket; its shims by the socket on their command lines.
	ctrdProcs := func() []int {
		data, err := os.ReadFile(filepath.Join(filepath.Dir(ctrdSock), "containerd.pid"))
		pid, perr := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || perr != nil {
			b.Fatalf("baseline containerd's pid: %v %v", err, perr)
		}
		return append([]int{pid}, pidsWhere(func(exe, cmdline string) bool {
			return strings.HasPrefix(filepath.Base(exe), "containerd-shim") && strings.Contains(cmdline, ctrdSock)
		})...)
	}
	if _, err := os.Stat(ctrdSock); err == nil {
		conn, err := grpc.NewClient("unix://"+ctrdSock, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		images := runtimeapi.NewImageServiceClient(conn)
		if _, err := images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: testutil.RegistryBusyboxRef}}); err != nil {
			b.Fatalf("pull into containerd: %v", err)
		}
		ctrd = runtimeapi.NewRuntimeServiceClient(conn)
		removePod(ctx, b, ctrd, startPodWith(ctx, b, ctrd, testutil.RegistryBusyboxRef, "mem-warm", host))
	} else {
		b.Logf("no baseline containerd at %s: crib only", ctrdSock)
	}

	type sample struct{ idle, loaded, monitor float64 }
	measure := func(rt runtimeapi.RuntimeServiceClient, image string, procs func() []int, perPod func() float64) sample {
		settle(b)
		idle := pssMiB(b, procs())
		ids := make([]string, memoryPods)
		for i := range ids {
			ids[i] = startPodWith(ctx, b, rt, image, fmt.Sprintf("mem-%d", i), host)
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
		s := measure(d.Runtime, img.Ref, cribProcs, func() float64 {
			mons := pidsWhere(func(exe, _ string) bool { return exe == monitor })
			return pssMiB(b, mons) / float64(len(mons))
		})
		crib.idle, crib.loaded, crib.monitor = crib.idle+s.idle, crib.loaded+s.loaded, crib.monitor+s.monitor
		if ctrd != nil {
			s := measure(ctrd, testutil.RegistryBusyboxRef, ctrdProcs, nil)
			base.idle, base.loaded = base.idle+s.idle, base.loaded+s.loaded
		}
	}
	b.StopTimer()
	n := float64(b.N)
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
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				b.Fatalf("pid %d: VmRSS %q: %v", pid, rest, err)
			}
			return float64(kib) / 1024
		}
	}
	b.Fatalf("pid %d: no VmRSS", pid)
	return 0
}
