package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// otherRuncEnv names a second runc binary BenchmarkPodTeardown also measures
// crib on, as runtime handler "runc-other"; unset, Debian's /usr/sbin/runc
// when it is another binary than the runc in PATH.
const otherRuncEnv = "CRIB_BENCH_OTHER_RUNC"

// BenchmarkPodTeardown measures a single pod's teardown (one busybox
// container sleeping): StopPodSandbox and RemovePodSandbox, each timed,
// through crib on the runc in PATH, through crib on a second runc
// (otherRuncEnv) as another runtime handler of the same daemon, and through
// the baseline containerd when it runs, alternately in each iteration. crib
// and containerd tear down a pod on the host network and one on a CNI bridge
// with the same plugins (the "-cni-" metrics); the second runc, the host's
// only. Starting the pods is not timed.
func BenchmarkPodTeardown(b *testing.B) {
	testutil.RequiresRoot(b)
	requireRegistry(b)
	img := registryBusybox
	other := otherRunc(b)
	extra := ""
	if other != "" {
		extra = fmt.Sprintf("[runtimes.runc-other]\npath = %q\n", other)
	}
	d := testutil.StartDaemon(b, testutil.Options{Image: &img, LogLevel: "warn", ExtraConfig: extra, CNIConfList: baselineConfList})
	ctx := context.Background()
	ctrd := dialBaseline(b)
	if ctrd != nil {
		ctrd.pull(ctx, b, img.Ref)
		removePod(ctx, b, ctrd.Runtime, startPodWith(ctx, b, ctrd.Runtime, img.Ref, "teardown-warm", hostNetwork))
	}
	type side struct {
		name    string
		rt      runtimeapi.RuntimeServiceClient
		handler string
		ns      *runtimeapi.NamespaceOption
		stop    time.Duration
		remove  time.Duration
	}
	cni := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER}
	sides := []*side{{name: "crib", rt: d.Runtime, ns: hostNetwork}, {name: "crib-cni", rt: d.Runtime, ns: cni}}
	if other != "" {
		sides = append(sides, &side{name: "crib-other-runc", rt: d.Runtime, handler: "runc-other", ns: hostNetwork})
	}
	if ctrd != nil {
		sides = append(sides, &side{name: "containerd", rt: ctrd.Runtime, ns: hostNetwork},
			&side{name: "containerd-cni", rt: ctrd.Runtime, ns: cni})
	}

	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, s := range sides {
			b.StopTimer()
			pod, ctr := podConfigs(img.Ref, fmt.Sprintf("teardown-%s-%d", s.name, i), s.ns)
			id, err := runPodOn(ctx, s.rt, s.handler, pod, ctr)
			if err != nil {
				b.Fatalf("%s: %v", s.name, err)
			}
			settle(b)
			start := time.Now()
			if _, err := s.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
				b.Fatalf("%s: stop pod: %v", s.name, err)
			}
			mid := time.Now()
			if _, err := s.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
				b.Fatalf("%s: remove pod: %v", s.name, err)
			}
			s.stop += mid.Sub(start)
			s.remove += time.Since(mid)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	bySide := map[string]*side{}
	for _, s := range sides {
		bySide[s.name] = s
		b.ReportMetric(float64(s.stop.Microseconds())/n, s.name+"-stop-µs")
		b.ReportMetric(float64(s.remove.Microseconds())/n, s.name+"-remove-µs")
		b.ReportMetric(float64((s.stop+s.remove).Microseconds())/n, s.name+"-teardown-µs/pod")
	}
	// Each crib side against the side it is measured against, whole and
	// phase by phase.
	for _, pair := range [][2]string{{"crib", "crib-other-runc"}, {"crib", "containerd"}, {"crib-cni", "containerd-cni"}} {
		c, base := bySide[pair[0]], bySide[pair[1]]
		if base == nil {
			continue
		}
		suffix := pair[0] + "/" + pair[1]
		b.ReportMetric(float64(c.stop+c.remove)/float64(base.stop+base.remove), suffix)
		if pair[1] != "crib-other-runc" {
			b.ReportMetric(float64(c.stop)/float64(base.stop), suffix+"-stop")
			b.ReportMetric(float64(c.remove)/float64(base.remove), suffix+"-remove")
		}
	}
}

// otherRunc is the second runc to measure, or "" if there is none.
func otherRunc(b *testing.B) string {
	b.Helper()
	if p := os.Getenv(otherRuncEnv); p != "" {
		return p
	}
	const debian = "/usr/sbin/runc"
	inPath, err := exec.LookPath("runc")
	if err != nil {
		b.Fatal(err)
	}
	a, errA := filepath.EvalSymlinks(inPath)
	c, errC := filepath.EvalSymlinks(debian)
	if errA != nil || errC != nil || a == c {
		return ""
	}
	return debian
}

// runPodOn runs the pod on a runtime handler ("" the default), creates its
// container and starts it, and returns the pod's id.
func runPodOn(ctx context.Context, rt runtimeapi.RuntimeServiceClient, handler string, pod *runtimeapi.PodSandboxConfig, ctr *runtimeapi.ContainerConfig) (string, error) {
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pod, RuntimeHandler: handler})
	if err != nil {
		return "", fmt.Errorf("run pod %s: %w", pod.Metadata.Uid, err)
	}
	c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, SandboxConfig: pod, Config: ctr})
	if err != nil {
		return sb.PodSandboxId, fmt.Errorf("create container in pod %s: %w", pod.Metadata.Uid, err)
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
		return sb.PodSandboxId, fmt.Errorf("start container in pod %s: %w", pod.Metadata.Uid, err)
	}
	return sb.PodSandboxId, nil
}
