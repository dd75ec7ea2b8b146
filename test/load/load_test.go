// Package loadtest puts a real crib daemon under the load of a busy node
// and of careless clients: many clients listing and asking for status in a
// loop while workers create and delete pods. It checks that nothing fails
// and nothing leaks, and prints the list latencies (figures, not
// assertions: scripts/bench.sh runs it for two minutes and reports them).
//
// Listers and workers each start at a fixed interval, as a kubelet's
// relist or a monitoring agent's scrape does, spread so that they do not
// all start at once (CRIB_LOAD_LIST_INTERVAL, CRIB_LOAD_POD_INTERVAL). A
// call's latency counts from when it was due, not from when it was sent: a
// lister that falls behind sends at once, and the time it was late is part
// of the latency, so a slow daemon cannot hide behind clients that wait for
// it. An interval of 0 is a closed loop instead, each calling again as soon
// as its answer arrives: that measures how much the machine serves, and the
// latencies are then the length of the queue for its CPUs.
package loadtest

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

const (
	// listers call List* and Status in a loop, each on its own
	// connection, as 100 monitoring agents and kubelets would.
	listers = 100
	// workers create and delete pods, each a pod with one container.
	workers = 8
)

// TestMain removes what the harness built for this binary (the crib
// binaries and the test image).
func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }

// pace reads an interval from the environment variable name: how often
// each lister or worker starts its next call; 0 is a closed loop, each
// starting again as soon as its last call returned.
func pace(t *testing.T, name string, def time.Duration) time.Duration {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		t.Fatalf("%s: %q is not a duration of 0 or more", name, s)
	}
	return d
}

// schedule is when one lister or worker is due to start its calls: every
// interval, the first one offset by its place among n peers so that they do
// not all start at once; with an interval of 0, whenever it is ready.
type schedule struct {
	every time.Duration
	due   time.Time
}

func newSchedule(every time.Duration, i, n int) *schedule {
	return &schedule{every: every, due: time.Now().Add(every * time.Duration(i) / time.Duration(n))}
}

// wait sleeps until the next call is due and returns when it was due: a
// call's latency counts from then, so the time it started late is part of
// it.
func (s *schedule) wait() time.Time {
	if s.every == 0 {
		return time.Now()
	}
	time.Sleep(time.Until(s.due))
	due := s.due
	s.due = s.due.Add(s.every)
	return due
}

// duration is how long the load lasts: $CRIB_LOAD_DURATION, or 20 s, which
// CI runs; the figure is for 2 minutes (scripts/bench.sh).
func duration(t *testing.T) time.Duration {
	if s := os.Getenv("CRIB_LOAD_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("CRIB_LOAD_DURATION: %v", err)
		}
		return d
	}
	return 20 * time.Second
}

// latencies collects the durations of one kind of call from many
// goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// quantile is the q-th quantile (0..1) of what was collected.
func (l *latencies) quantile(q float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0
	}
	s := slices.Clone(l.d)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

func (l *latencies) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.d)
}

func TestLoad(t *testing.T) {
	testutil.RequiresRoot(t)
	img := testutil.Busybox(t)
	d := testutil.StartDaemon(t, testutil.Options{Image: &img, LogLevel: "info", ExtraConfig: testutil.MetricsConfig})
	runFor := duration(t)
	// 100 listers every 100 ms make 1,000 calls a second: five times what
	// the relists of 100 kubelets make (a ListPodSandbox and a
	// ListContainers a second each). 8 workers every 4 s churn 2 pods a
	// second, 7,200 an hour: a busy node's day. Either 0 is a closed loop,
	// which measures what the machine serves when nothing waits: its
	// latencies are then the queue for the CPU.
	listEvery := pace(t, "CRIB_LOAD_LIST_INTERVAL", 100*time.Millisecond)
	podEvery := pace(t, "CRIB_LOAD_POD_INTERVAL", 4*time.Second)

	// The load ends when runFor is over: each goroutine stops between
	// calls. Each call has a context of its own, so that the end never
	// cuts one short and any error is the daemon's.
	end := time.Now().Add(runFor)
	live := func() bool { return time.Now().Before(end) }
	call := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), testutil.Patience(60*time.Second))
	}
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		errs     []string
		list     latencies
		status   latencies
		podsMade atomic.Int64
	)
	fail := func(format string, args ...any) {
		errMu.Lock()
		defer errMu.Unlock()
		if len(errs) < 20 {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
	}

	for i := range listers {
		conn, err := grpc.NewClient("unix://"+d.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		rt := runtimeapi.NewRuntimeServiceClient(conn)
		images := runtimeapi.NewImageServiceClient(conn)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sched := newSchedule(listEvery, i, listers)
			for n := 0; live(); n++ {
				due := sched.wait()
				ctx, cancel := call()
				var err error
				switch (i + n) % 4 {
				case 0:
					_, err = rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
				case 1:
					_, err = rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
				case 2:
					_, err = images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
				case 3:
					_, err = rt.Status(ctx, &runtimeapi.StatusRequest{})
				}
				took := time.Since(due)
				cancel()
				if err != nil {
					fail("lister %d: %v", i, err)
					return
				}
				if (i+n)%4 == 3 {
					status.add(took)
				} else {
					list.add(took)
				}
			}
		}()
	}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sched := newSchedule(podEvery, w, workers)
			for n := 0; live(); n++ {
				sched.wait()
				ctx, cancel := call()
				err := podCycle(ctx, d.Runtime, img.Ref, fmt.Sprintf("load-%d-%d", w, n), w%2 == 0)
				cancel()
				if err != nil {
					fail("worker %d: %v", w, err)
					return
				}
				podsMade.Add(1)
			}
		}()
	}
	wg.Wait()
	served := testutil.Scrape(t, d.MetricsURL(t))["crib_cri_request_duration_seconds"]

	// A worker that failed may have left its pod: remove what is there,
	// as the kubelet would, then nothing may be left.
	cleanup, cancelCleanup := context.WithTimeout(context.Background(), testutil.Patience(60*time.Second))
	defer cancelCleanup()
	pods, err := d.Runtime.ListPodSandbox(cleanup, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if _, err := d.Runtime.StopPodSandbox(cleanup, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			t.Errorf("stop %s: %v", p.Id, err)
		}
		if _, err := d.Runtime.RemovePodSandbox(cleanup, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			t.Errorf("remove %s: %v", p.Id, err)
		}
	}

	t.Logf("load for %s: %d listers %s, %d pod workers %s (half on a CNI bridge, half on the host network)",
		runFor, listers, paceText(listEvery), workers, paceText(podEvery))
	t.Logf("  pods created and deleted: %d (%.1f/s)", podsMade.Load(), float64(podsMade.Load())/runFor.Seconds())
	t.Logf("  List* calls: %d (%.0f/s), median %s, p99 %s, max %s (goal: p99 under 10ms)",
		list.count(), float64(list.count())/runFor.Seconds(), list.quantile(0.5), list.quantile(0.99), list.quantile(1))
	t.Logf("  Status calls: %d, median %s, p99 %s", status.count(), status.quantile(0.5), status.quantile(0.99))
	// The daemon's own time for the same calls, from its histogram: from
	// a request's arrival to its answer, without the time either process
	// waited for a CPU.
	for _, kind := range []struct {
		name    string
		methods []string
	}{{"List*", []string{"ListPodSandbox", "ListContainers", "ListImages"}}, {"Status", []string{"Status"}}} {
		h := histogramOf(served, kind.methods)
		t.Logf("  %s in the daemon: p99 within %s, %.2f%% within 10ms (its histogram, %d calls)",
			kind.name, h.quantileBound(0.99), 100*h.shareWithin(0.010), h.count)
	}
	if len(errs) > 0 {
		t.Errorf("errors under load:\n  %s", strings.Join(errs, "\n  "))
	}
	if podsMade.Load() == 0 {
		t.Errorf("no pod was created and deleted under load")
	}
	// The leak check runs at cleanup, after the daemon stops: mounts,
	// processes, cgroups, runc containers, IPs, files and records.
}

// histogram is the sum of a Prometheus histogram's series over some
// values of its method label: cumulative counts by upper bound (seconds).
type histogram struct {
	bounds []float64
	counts []uint64
	count  uint64
}

func histogramOf(fam *dto.MetricFamily, methods []string) histogram {
	var h histogram
	for _, m := range fam.GetMetric() {
		if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
			return l.GetName() == "method" && slices.Contains(methods, l.GetValue())
		}) {
			continue
		}
		for i, b := range m.GetHistogram().GetBucket() {
			if i == len(h.bounds) {
				h.bounds = append(h.bounds, b.GetUpperBound())
				h.counts = append(h.counts, 0)
			}
			h.counts[i] += b.GetCumulativeCount()
		}
		h.count += m.GetHistogram().GetSampleCount()
	}
	return h
}

// quantileBound is the smallest bucket bound at or under which the q-th
// quantile lies.
func (h histogram) quantileBound(q float64) time.Duration {
	for i, c := range h.counts {
		if float64(c) >= q*float64(h.count) {
			return time.Duration(h.bounds[i] * float64(time.Second))
		}
	}
	return time.Duration(math.MaxInt64)
}

// shareWithin is the share of calls that took at most bound seconds, a
// bucket's bound.
func (h histogram) shareWithin(bound float64) float64 {
	for i, b := range h.bounds {
		if b == bound && h.count > 0 {
			return float64(h.counts[i]) / float64(h.count)
		}
	}
	return 0
}

// paceText says how often a lister or worker starts.
func paceText(every time.Duration) string {
	if every == 0 {
		return "in a closed loop"
	}
	return "each starting every " + every.String()
}

// podCycle runs a pod with a container, then stops and removes it.
func podCycle(ctx context.Context, rt runtimeapi.RuntimeServiceClient, image, name string, cni bool) error {
	netMode := runtimeapi.NamespaceMode_NODE
	if cni {
		netMode = runtimeapi.NamespaceMode_POD
	}
	ns := &runtimeapi.NamespaceOption{Network: netMode, Pid: runtimeapi.NamespaceMode_CONTAINER}
	pod := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "load", Uid: name},
		Linux:    &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: ns}},
	}
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pod})
	if err != nil {
		return fmt.Errorf("run pod %s: %w", name, err)
	}
	ctr, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sb.PodSandboxId, SandboxConfig: pod,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "sleep"},
			Image:    &runtimeapi.ImageSpec{Image: image},
			Command:  []string{"sleep", "3600"},
			Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				NamespaceOptions: ns,
			}},
		},
	})
	if err != nil {
		return fmt.Errorf("create container in %s: %w", name, err)
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ctr.ContainerId}); err != nil {
		return fmt.Errorf("start container in %s: %w", name, err)
	}
	if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.PodSandboxId}); err != nil {
		return fmt.Errorf("stop pod %s: %w", name, err)
	}
	if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.PodSandboxId}); err != nil {
		return fmt.Errorf("remove pod %s: %w", name, err)
	}
	return nil
}
