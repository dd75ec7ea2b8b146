// Package loadtest puts a real crib daemon under the load of a busy node
// and of careless clients: many clients listing and asking for status in a
// loop while workers create and delete pods. It checks that nothing fails
// and nothing leaks, and prints the list latencies (figures, not
// assertions: scripts/bench.sh runs it for two minutes and reports them).
package loadtest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	d := testutil.StartDaemon(t, testutil.Options{Image: &img, LogLevel: "info"})
	runFor := duration(t)

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
			for n := 0; live(); n++ {
				ctx, cancel := call()
				start := time.Now()
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
				took := time.Since(start)
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
			for n := 0; live(); n++ {
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

	t.Logf("load for %s: %d listers, %d pod workers (half on a CNI bridge, half on the host network)", runFor, listers, workers)
	t.Logf("  pods created and deleted: %d (%.1f/s)", podsMade.Load(), float64(podsMade.Load())/runFor.Seconds())
	t.Logf("  List* calls: %d, median %s, p99 %s, max %s (goal: p99 under 10ms)",
		list.count(), list.quantile(0.5), list.quantile(0.99), list.quantile(1))
	t.Logf("  Status calls: %d, median %s, p99 %s", status.count(), status.quantile(0.5), status.quantile(0.99))
	if len(errs) > 0 {
		t.Errorf("errors under load:\n  %s", strings.Join(errs, "\n  "))
	}
	if podsMade.Load() == 0 {
		t.Errorf("no pod was created and deleted under load")
	}
	// The leak check runs at cleanup, after the daemon stops: mounts,
	// processes, cgroups, runc containers, IPs, files and records.
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
