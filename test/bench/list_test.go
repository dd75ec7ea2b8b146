package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/reclaim"
	"github.com/crib-dev/crib/internal/testutil"
)

// listContainers is how many containers BenchmarkListContainers lists.
const listContainers = 1000

// BenchmarkListContainers measures, alternately in each iteration, an
// unfiltered ListContainers and a StreamContainers (KEP-5825) over the
// same 1,000 created containers in 50 pods, the same answer from a gRPC
// server with nothing behind it (the floor: transport and the client's
// decoding, see listFloor), and, when the baseline
// containerd runs, its ListContainers over 1,000 containers made the same
// way (containerd 1.6 has no StreamContainers). It reports the median and
// p99 of each, then the wall time of stopping and removing the 50 pods on
// each side, and each side's resident memory (crib's daemon; containerd
// and its shims) before the containers were made and after they were
// removed. The containers are created, not started: listing reads the
// same records either way.
func BenchmarkListContainers(b *testing.B) {
	testutil.RequiresRoot(b)
	requireRegistry(b)
	img := registryBusybox
	d := testutil.StartDaemon(b, testutil.Options{Image: &img, LogLevel: "warn"})
	ctx := context.Background()
	ctrd := dialBaseline(b)
	if ctrd != nil {
		ctrd.pull(ctx, b, img.Ref)
	}
	// The daemon hands what the image pull freed back to the kernel once
	// pulls pause (internal/reclaim); idle is read after that, as after is.
	time.Sleep(reclaim.Quiet + time.Second)
	cribIdle := rssMiB(b, d.Pid())
	cribPods := makeContainers(ctx, b, d.Runtime, img.Ref)
	var ctrdIdle float64
	var ctrdPods []string
	if ctrd != nil {
		ctrdIdle = ctrd.rssMiB(b)
		ctrdPods = makeContainers(ctx, b, ctrd.Runtime, img.Ref)
	}

	var last *runtimeapi.ListContainersResponse
	list := func(rt runtimeapi.RuntimeServiceClient) time.Duration {
		start := time.Now()
		resp, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
		took := time.Since(start)
		if err != nil || len(resp.Containers) != listContainers {
			b.Fatalf("ListContainers: %d containers, %v", len(resp.GetContainers()), err)
		}
		last = resp
		return took
	}
	// The floor answers with crib's own answer: the same containers, the
	// same bytes.
	list(d.Runtime)
	floor := serveListFloor(b, last)
	var listTimes, streamTimes, ctrdTimes, floorTimes []time.Duration
	b.ResetTimer()
	for range b.N {
		listTimes = append(listTimes, list(d.Runtime))
		floorTimes = append(floorTimes, list(floor))

		start := time.Now()
		stream, err := d.Runtime.StreamContainers(ctx, &runtimeapi.StreamContainersRequest{})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			resp, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n += len(resp.Containers)
		}
		streamTimes = append(streamTimes, time.Since(start))
		if n != listContainers {
			b.Fatalf("StreamContainers: %d containers", n)
		}

		if ctrd != nil {
			ctrdTimes = append(ctrdTimes, list(ctrd.Runtime))
		}
	}
	b.StopTimer()
	listMed, streamMed := median(listTimes), median(streamTimes)
	b.ReportMetric(float64(listMed.Microseconds()), "list-median-µs")
	b.ReportMetric(float64(quantile(listTimes, 0.99).Microseconds()), "list-p99-µs")
	b.ReportMetric(float64(streamMed.Microseconds()), "stream-median-µs")
	b.ReportMetric(float64(quantile(streamTimes, 0.99).Microseconds()), "stream-p99-µs")
	b.ReportMetric(float64(streamMed)/float64(listMed), "stream/list")
	b.ReportMetric(float64(median(floorTimes).Microseconds()), "floor-list-median-µs")
	b.ReportMetric(float64(quantile(floorTimes, 0.99).Microseconds()), "floor-list-p99-µs")
	if ctrd != nil {
		b.ReportMetric(float64(median(ctrdTimes).Microseconds()), "containerd-list-median-µs")
		b.ReportMetric(float64(quantile(ctrdTimes, 0.99).Microseconds()), "containerd-list-p99-µs")
	}

	// The pods go here rather than in the harness's cleanup, whose
	// deadline is sized for a test's few pods; the wall time is reported.
	settle(b)
	cribTeardown := removePods(ctx, b, d.Runtime, cribPods)
	b.ReportMetric(cribTeardown.Seconds(), "teardown-s")
	if ctrd != nil {
		settle(b)
		ctrdTeardown := removePods(ctx, b, ctrd.Runtime, ctrdPods)
		b.ReportMetric(ctrdTeardown.Seconds(), "containerd-teardown-s")
	}
	// The daemon hands what the removals freed back to the kernel once
	// they pause (internal/reclaim); its resident set is read after that.
	time.Sleep(reclaim.Quiet + time.Second)
	b.ReportMetric(cribIdle, "daemon-idle-RSS-MiB")
	b.ReportMetric(rssMiB(b, d.Pid()), "daemon-after-RSS-MiB")
	if ctrd != nil {
		b.ReportMetric(ctrdIdle, "containerd-idle-RSS-MiB")
		b.ReportMetric(ctrd.rssMiB(b), "containerd-after-RSS-MiB")
	}
}

// makeContainers runs 50 host-network pods and creates 1,000 containers in
// them, and returns the pods' ids.
func makeContainers(ctx context.Context, b *testing.B, rt runtimeapi.RuntimeServiceClient, image string) []string {
	b.Helper()
	const pods = 50
	var podIDs []string
	for p := range pods {
		cfg := &runtimeapi.PodSandboxConfig{
			Metadata:     &runtimeapi.PodSandboxMetadata{Name: fmt.Sprintf("list-%d", p), Namespace: "bench", Uid: fmt.Sprintf("list-uid-%d", p)},
			LogDirectory: b.TempDir(),
			Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
			}},
		}
		pod, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
		if err != nil {
			b.Fatal(err)
		}
		podIDs = append(podIDs, pod.PodSandboxId)
		for c := range listContainers / pods {
			_, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
				PodSandboxId: pod.PodSandboxId, SandboxConfig: cfg,
				Config: &runtimeapi.ContainerConfig{
					Metadata: &runtimeapi.ContainerMetadata{Name: fmt.Sprintf("c%d", c)},
					Image:    &runtimeapi.ImageSpec{Image: image},
					Command:  []string{"true"},
					LogPath:  fmt.Sprintf("c%d.log", c),
					Labels:   map[string]string{"io.kubernetes.container.name": fmt.Sprintf("c%d", c), "io.kubernetes.pod.name": cfg.Metadata.Name},
				},
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	return podIDs
}

// removePods stops and removes the pods one after another and returns the
// wall time.
func removePods(ctx context.Context, b *testing.B, rt runtimeapi.RuntimeServiceClient, ids []string) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	start := time.Now()
	for _, id := range ids {
		removePod(ctx, b, rt, id)
	}
	return time.Since(start)
}

// quantile is the q-th quantile of ds, by nearest rank.
func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
