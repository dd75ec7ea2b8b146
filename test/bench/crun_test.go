package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/crib-dev/crib/internal/testutil"
)

// CrunEnv names the crun binary BenchmarkPodStartCrun runs crib's crun
// handler on (scripts/build-crun.sh builds one); unset skips it.
const CrunEnv = "CRIB_BENCH_CRUN"

// BenchmarkPodStartCrun is BenchmarkPodStart with crun as the handler: in
// each iteration, alternately, the same host-network busybox pod through
// crib on its crun handler and on its runc handler, and the bare floors
// `runc run -d` and `crun run -d` of the same rootfs on runc's default
// spec. The figure is crib-crun/runc: crib on crun against the
// bare runc floor; crib-runc/runc is the same run's reference.
func BenchmarkPodStartCrun(b *testing.B) {
	crun := os.Getenv(CrunEnv)
	if crun == "" {
		b.Skipf("%s names no crun binary (scripts/build-crun.sh builds one)", CrunEnv)
	}
	testutil.RequiresRoot(b)
	requireRegistry(b)
	img := registryBusybox
	d := testutil.StartDaemon(b, testutil.Options{Image: &img, LogLevel: "warn",
		ExtraConfig: fmt.Sprintf("[runtimes.crun]\npath = %q\n", crun)})
	ctx := context.Background()
	bundle := runcBundle(b, d, img.Ref)
	errFile, err := os.CreateTemp(b.TempDir(), "runtime-stderr")
	if err != nil {
		b.Fatal(err)
	}
	defer errFile.Close()
	bare := map[string]string{"runc": b.TempDir(), crun: b.TempDir()}
	runBare := func(binary, id string) time.Duration {
		settle(b)
		start := time.Now()
		// The detached container inherits the runtime's stdio: a pipe
		// would never close, so its errors go to a file.
		run := exec.Command(binary, "--root", bare[binary], "run", "-d", "--bundle", bundle, id)
		run.Stderr = errFile
		if err := run.Run(); err != nil {
			out, _ := os.ReadFile(errFile.Name())
			b.Fatalf("%s run: %v: %s", binary, err, out)
		}
		return time.Since(start)
	}
	startOn := func(handler, uid string) (string, time.Duration) {
		settle(b)
		pod, ctr := podConfigs(img.Ref, uid, hostNetwork)
		start := time.Now()
		id, err := runPodOn(ctx, d.Runtime, handler, pod, ctr)
		if err != nil {
			b.Fatalf("pod on %s: %v", handler, err)
		}
		return id, time.Since(start)
	}

	var onCrun, onRunc, bareRunc, bareCrun time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		crunPod, t := startOn("crun", fmt.Sprintf("crun-%d", i))
		onCrun += t
		runcPod, t := startOn("runc", fmt.Sprintf("runc-%d", i))
		onRunc += t
		// Apart: without a cgroupsPath each runtime makes a cgroup named
		// after the id.
		id := fmt.Sprintf("bench-crun-%d", i)
		bareRunc += runBare("runc", "runc-"+id)
		bareCrun += runBare(crun, id)

		b.StopTimer()
		for binary, root := range bare {
			ctr := id
			if binary == "runc" {
				ctr = "runc-" + id
			}
			if out, err := exec.Command(binary, "--root", root, "delete", "--force", ctr).CombinedOutput(); err != nil {
				b.Fatalf("%s delete: %v: %s", binary, err, out)
			}
		}
		removePod(ctx, b, d.Runtime, crunPod)
		removePod(ctx, b, d.Runtime, runcPod)
		b.StartTimer()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(onCrun.Microseconds())/n, "crib-crun-µs/pod")
	b.ReportMetric(float64(onRunc.Microseconds())/n, "crib-runc-µs/pod")
	b.ReportMetric(float64(bareRunc.Microseconds())/n, "runc-µs/run")
	b.ReportMetric(float64(bareCrun.Microseconds())/n, "crun-µs/run")
	b.ReportMetric(float64(onCrun)/float64(bareRunc), "crib-crun/runc")
	b.ReportMetric(float64(onRunc)/float64(bareRunc), "crib-runc/runc")
	b.ReportMetric(float64(bareCrun)/float64(bareRunc), "crun/runc")
}
