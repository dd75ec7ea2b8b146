package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }

// BenchmarkPodStart measures, alternately in each iteration, the time from
// RunPodSandbox to a running busybox container (host network, one
// container) through crib, the time of a bare `runc run -d` of the same
// image's rootfs on runc's default spec (the floor), and, when the
// baseline containerd runs, the same pod through containerd. It reports
// each and the ratios, and where crib's time went (reportStartBreakdown);
// teardown is not timed.
func BenchmarkPodStart(b *testing.B) {
	testutil.RequiresRoot(b)
	requireRegistry(b)
	img := registryBusybox
	metricsCfg, metricsURL := testutil.MetricsOnFreePort(b)
	d := testutil.StartDaemon(b, testutil.Options{Image: &img, LogLevel: "warn", ExtraConfig: metricsCfg})
	ctx := context.Background()
	bundle := runcBundle(b, d, img.Ref)
	runcRoot := b.TempDir()
	errFile, err := os.CreateTemp(b.TempDir(), "runc-stderr")
	if err != nil {
		b.Fatal(err)
	}
	defer errFile.Close()
	ctrd := dialBaseline(b)
	if ctrd != nil {
		ctrd.pull(ctx, b, img.Ref)
		// A first pod pulls containerd's pause image outside the timing.
		removePod(ctx, b, ctrd.Runtime, startPodWith(ctx, b, ctrd.Runtime, img.Ref, "bench-warm", hostNetwork))
	}

	var cribTotal, runcTotal, ctrdTotal time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		settle(b)
		start := time.Now()
		podID := startPodWith(ctx, b, d.Runtime, img.Ref, fmt.Sprintf("bench-%d", i), hostNetwork)
		cribTotal += time.Since(start)

		settle(b)
		id := fmt.Sprintf("bench-%d", i)
		start = time.Now()
		// The detached container inherits runc's stdio: a pipe would
		// never close, so runc's errors go to a file.
		run := exec.Command("runc", "--root", runcRoot, "run", "-d", "--bundle", bundle, id)
		run.Stderr = errFile
		if err := run.Run(); err != nil {
			out, _ := os.ReadFile(errFile.Name())
			b.Fatalf("runc run: %v: %s", err, out)
		}
		runcTotal += time.Since(start)

		var ctrdPod string
		if ctrd != nil {
			settle(b)
			start = time.Now()
			ctrdPod = startPodWith(ctx, b, ctrd.Runtime, img.Ref, fmt.Sprintf("bench-%d", i), hostNetwork)
			ctrdTotal += time.Since(start)
		}

		b.StopTimer()
		if out, err := exec.Command("runc", "--root", runcRoot, "delete", "--force", id).CombinedOutput(); err != nil {
			b.Fatalf("runc delete: %v: %s", err, out)
		}
		removePod(ctx, b, d.Runtime, podID)
		if ctrd != nil {
			removePod(ctx, b, ctrd.Runtime, ctrdPod)
		}
		b.StartTimer()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(cribTotal.Microseconds())/n, "crib-µs/pod")
	b.ReportMetric(float64(runcTotal.Microseconds())/n, "runc-µs/run")
	b.ReportMetric(float64(cribTotal)/float64(runcTotal), "crib/runc")
	if ctrd != nil {
		b.ReportMetric(float64(ctrdTotal.Microseconds())/n, "containerd-µs/pod")
		b.ReportMetric(float64(cribTotal)/float64(ctrdTotal), "crib/containerd")
	}
	reportStartBreakdown(b, metricsURL)
}

// reportStartBreakdown reports where crib's pod starts went, by its own
// metrics: the mean of each CRI call a start makes, and of each pod-start
// phase (runtime_start is runc creating and starting the container, the
// part the bare runc floor also pays).
func reportStartBreakdown(b *testing.B, metricsURL string) {
	b.Helper()
	fams := testutil.Scrape(b, metricsURL)
	mean := func(family, label, value string) (float64, bool) {
		f := fams[family]
		if f == nil {
			return 0, false
		}
		var sum float64
		var count uint64
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					sum += m.GetHistogram().GetSampleSum()
					count += m.GetHistogram().GetSampleCount()
				}
			}
		}
		if count == 0 {
			return 0, false
		}
		return sum / float64(count) * 1e6, true
	}
	for _, rpc := range []string{"RunPodSandbox", "CreateContainer", "StartContainer"} {
		if v, ok := mean("crib_cri_request_duration_seconds", "method", rpc); ok {
			b.ReportMetric(v, rpc+"-µs")
		}
	}
	for _, phase := range []string{"namespaces", "image_resolve", "spec", "runtime_start"} {
		if v, ok := mean("crib_pod_start_phase_duration_seconds", "phase", phase); ok {
			b.ReportMetric(v, "phase-"+phase+"-µs")
		}
	}
}

// hostNetwork is a pod on the node's network with a PID namespace per
// container.
var hostNetwork = &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_CONTAINER}

// settle lets the background work of the previous step (a monitor
// refilling crib's pool, a removed pod's processes exiting) finish before
// the next timed step, so that neither side pays for the other.
func settle(b *testing.B) {
	b.StopTimer()
	time.Sleep(100 * time.Millisecond)
	b.StartTimer()
}

// runcBundle writes an OCI bundle whose rootfs is the image's unpacked
// layer in crib's store (read-only, so both sides start from the same
// files), with runc's default spec on the host network.
func runcBundle(b *testing.B, d *testutil.Daemon, image string) string {
	b.Helper()
	st, err := d.Images.ImageStatus(context.Background(), &runtimeapi.ImageStatusRequest{
		Image: &runtimeapi.ImageSpec{Image: image}, Verbose: true,
	})
	if err != nil || st.Image == nil {
		b.Fatalf("image status: %v", err)
	}
	var info struct {
		ChainIDs []string `json:"chainIDs"`
	}
	if err := json.Unmarshal([]byte(st.Info["info"]), &info); err != nil || len(info.ChainIDs) != 1 {
		b.Fatalf("image info %q: want one layer (%v)", st.Info["info"], err)
	}
	hex := info.ChainIDs[0][len("sha256:"):]
	rootfs := filepath.Join(d.Root, "images", "snapshots", hex, "fs")

	bundle := b.TempDir()
	if out, err := exec.Command("runc", "spec", "--bundle", bundle).CombinedOutput(); err != nil {
		b.Fatalf("runc spec: %v: %s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		b.Fatal(err)
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		b.Fatal(err)
	}
	spec.Root = &specs.Root{Path: rootfs, Readonly: true}
	spec.Process.Terminal = false
	spec.Process.Args = []string{"sleep", "3600"}
	var ns []specs.LinuxNamespace
	for _, n := range spec.Linux.Namespaces {
		if n.Type != specs.NetworkNamespace {
			ns = append(ns, n)
		}
	}
	spec.Linux.Namespaces = ns
	out, err := json.Marshal(spec)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), out, 0o644); err != nil {
		b.Fatal(err)
	}
	return bundle
}
