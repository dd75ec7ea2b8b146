package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"

	"github.com/crib-dev/crib/internal/testutil"
)

// nriAdjuster adds an env var and an annotation to every container.
type nriAdjuster struct{}

func (nriAdjuster) CreateContainer(_ context.Context, _ *api.PodSandbox, _ *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	a := &api.ContainerAdjustment{}
	a.AddEnv("NRI_BENCH", "1")
	a.AddAnnotation("nri.bench/adjusted", "true")
	return a, nil, nil
}

// BenchmarkPodStartNRI measures, alternately in each iteration, the time
// from RunPodSandbox to a running busybox container on three daemons: NRI
// disabled (the baseline), NRI enabled with no plugin, and NRI enabled with
// one plugin (NRI's stub, in this process, over the socket) that adjusts
// every container. It reports each and the ratios against the baseline.
func BenchmarkPodStartNRI(b *testing.B) {
	testutil.RequiresRoot(b)
	requireRegistry(b)
	img := registryBusybox
	off := testutil.StartDaemon(b, testutil.Options{Image: &img, LogLevel: "warn", ExtraConfig: "[nri]\nenable = false\n"})
	bare := testutil.StartDaemon(b, testutil.Options{Image: &img, LogLevel: "warn"})
	adjusted := testutil.StartDaemon(b, testutil.Options{Image: &img, LogLevel: "warn"})
	s, err := stub.New(nriAdjuster{}, stub.WithSocketPath(adjusted.NRISocket), stub.WithPluginIdx("10"), stub.WithPluginName("adjuster"))
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Stop)
	ctx := context.Background()
	daemons := []*testutil.Daemon{off, bare, adjusted}
	totals := make([]time.Duration, len(daemons))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pods := make([]string, len(daemons))
		for j, d := range daemons {
			settle(b)
			start := time.Now()
			pods[j] = startPodWith(ctx, b, d.Runtime, img.Ref, fmt.Sprintf("bench-%d", i), hostNetwork)
			totals[j] += time.Since(start)
		}
		b.StopTimer()
		for j, d := range daemons {
			removePod(ctx, b, d.Runtime, pods[j])
		}
		b.StartTimer()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(totals[0].Microseconds())/n, "nri-off-µs/pod")
	b.ReportMetric(float64(totals[1].Microseconds())/n, "nri-on-µs/pod")
	b.ReportMetric(float64(totals[2].Microseconds())/n, "nri-plugin-µs/pod")
	b.ReportMetric(float64(totals[1])/float64(totals[0]), "nri-on/off")
	b.ReportMetric(float64(totals[2])/float64(totals[0]), "nri-plugin/off")
}
