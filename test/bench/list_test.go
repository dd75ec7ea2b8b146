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

	"github.com/crib-dev/crib/internal/testutil"
)

// listContainers is how many containers BenchmarkListContainers lists.
const listContainers = 1000

// BenchmarkListContainers measures, alternately in each iteration, an
// unfiltered ListContainers and a StreamContainers (KEP-5825) over the
// same 1,000 created containers in 50 pods, and reports the median and
// p99 of each and the ratio of the medians. The containers are created,
// not started: listing reads the same records either way.
func BenchmarkListContainers(b *testing.B) {
	img := testutil.Busybox(b)
	d := testutil.StartDaemon(b, testutil.Options{Image: &img, LogLevel: "warn"})
	ctx := context.Background()
	settle(b)
	idleRSS := rssMiB(b, d.Pid())
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
		pod, err := d.Runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
		if err != nil {
			b.Fatal(err)
		}
		podIDs = append(podIDs, pod.PodSandboxId)
		for c := range listContainers / pods {
			_, err := d.Runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
				PodSandboxId: pod.PodSandboxId, SandboxConfig: cfg,
				Config: &runtimeapi.ContainerConfig{
					Metadata: &runtimeapi.ContainerMetadata{Name: fmt.Sprintf("c%d", c)},
					Image:    &runtimeapi.ImageSpec{Image: img.Ref},
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
	var listTimes, streamTimes []time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		list, err := d.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
		listTimes = append(listTimes, time.Since(start))
		if err != nil || len(list.Containers) != listContainers {
			b.Fatalf("ListContainers: %d containers, %v", len(list.GetContainers()), err)
		}

		start = time.Now()
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
	}
	b.StopTimer()
	listMed, streamMed := median(listTimes), median(streamTimes)
	b.ReportMetric(float64(listMed.Microseconds()), "list-median-µs")
	b.ReportMetric(float64(quantile(listTimes, 0.99).Microseconds()), "list-p99-µs")
	b.ReportMetric(float64(streamMed.Microseconds()), "stream-median-µs")
	b.ReportMetric(float64(quantile(streamTimes, 0.99).Microseconds()), "stream-p99-µs")
	b.ReportMetric(float64(streamMed)/float64(listMed), "stream/list")

	// The pods go here rather than in the harness's cleanup, whose
	// deadline is sized for a test's few pods; the wall time is reported.
	teardown, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	start := time.Now()
	for _, id := range podIDs {
		if _, err := d.Runtime.StopPodSandbox(teardown, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
			b.Fatal(err)
		}
		if _, err := d.Runtime.RemovePodSandbox(teardown, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(time.Since(start).Seconds(), "teardown-s")
	settle(b)
	b.ReportMetric(idleRSS, "daemon-idle-RSS-MiB")
	b.ReportMetric(rssMiB(b, d.Pid()), "daemon-after-RSS-MiB")
}

// quantile is the q-th quantile of ds, by nearest rank.
func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
