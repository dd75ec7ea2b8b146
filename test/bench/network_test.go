package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// baselineConfList is the network containerd-up.sh gives the baseline
// containerd: bridge, host-local and portmap (containerd adds loopback
// itself; crib brings lo up without a plugin).
const baselineConfList = `{
  "cniVersion": "1.0.0",
  "name": "{{.Bridge}}",
  "plugins": [
    {"type": "bridge", "bridge": "{{.Bridge}}", "isGateway": true, "ipMasq": true,
     "ipam": {"type": "host-local", "dataDir": "{{.DataDir}}", "ranges": [[{"subnet": "{{.Subnet}}"}]]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}`

// containerdEndpoint is the baseline containerd of ../shared/conformance
// (containerd-up.sh), or CRIB_BENCH_CONTAINERD.
func containerdEndpoint() string {
	if ep := os.Getenv("CRIB_BENCH_CONTAINERD"); ep != "" {
		return ep
	}
	return "/run/cri-conformance/ctrd16/containerd.sock"
}

// BenchmarkPodStartNetwork measures, alternately in each iteration, the
// time from RunPodSandbox to a running busybox container for: a crib pod on
// the host network, a crib pod on a CNI bridge, and, when the baseline
// containerd runs, a containerd pod on a CNI bridge with the same plugins.
// It reports each and the ratios; teardown is not timed.
func BenchmarkPodStartNetwork(b *testing.B) {
	testutil.RequiresRoot(b)
	img := testutil.TestImage{
		Ref:     testutil.RegistryBusyboxRef,
		Mirrors: map[string][]string{"registry.k8s.io": {testutil.LoopbackRegistry}},
	}
	if conn, err := net.DialTimeout("tcp", "127.0.0.1:5000", time.Second); err != nil {
		b.Skip("the loopback registry is not up (../shared/conformance/images.sh)")
	} else {
		conn.Close()
	}
	d := testutil.StartDaemon(b, testutil.Options{Image: &img, LogLevel: os.Getenv("CRIB_BENCH_LOG"), CNIConfList: baselineConfList})
	ctx := context.Background()

	var ctrd runtimeapi.RuntimeServiceClient
	if _, err := os.Stat(containerdEndpoint()); err == nil {
		conn, err := grpc.NewClient("unix://"+containerdEndpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		images := runtimeapi.NewImageServiceClient(conn)
		if _, err := images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: img.Ref}}); err != nil {
			b.Fatalf("pull %s into containerd: %v", img.Ref, err)
		}
		ctrd = runtimeapi.NewRuntimeServiceClient(conn)
		// A first pod pulls containerd's pause image outside the timing.
		removePod(ctx, b, ctrd, startNetPod(ctx, b, ctrd, img.Ref, "warm", false))
	} else {
		b.Logf("no baseline containerd at %s (../shared/conformance/containerd-up.sh): crib only", containerdEndpoint())
	}

	var host, cni, base time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, run := range []struct {
			rt    runtimeapi.RuntimeServiceClient
			total *time.Duration
			host  bool
		}{{d.Runtime, &host, true}, {d.Runtime, &cni, false}, {ctrd, &base, false}} {
			if run.rt == nil {
				continue
			}
			settle(b)
			start := time.Now()
			id := startNetPod(ctx, b, run.rt, img.Ref, fmt.Sprint(i), run.host)
			*run.total += time.Since(start)
			b.StopTimer()
			removePod(ctx, b, run.rt, id)
			b.StartTimer()
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(host.Microseconds())/n, "crib-host-µs/pod")
	b.ReportMetric(float64(cni.Microseconds())/n, "crib-cni-µs/pod")
	b.ReportMetric(float64((cni-host).Microseconds())/n, "cni-added-µs/pod")
	if ctrd != nil {
		b.ReportMetric(float64(base.Microseconds())/n, "containerd-cni-µs/pod")
		b.ReportMetric(float64(cni)/float64(base), "crib/containerd")
	}
}

func startNetPod(ctx context.Context, b *testing.B, rt runtimeapi.RuntimeServiceClient, image, suffix string, hostNet bool) string {
	b.Helper()
	mode := runtimeapi.NamespaceMode_POD
	if hostNet {
		mode = runtimeapi.NamespaceMode_NODE
	}
	ns := &runtimeapi.NamespaceOption{Network: mode, Pid: runtimeapi.NamespaceMode_CONTAINER}
	return startPodWith(ctx, b, rt, image, fmt.Sprintf("netbench-%v-%s", hostNet, suffix), ns)
}

// startPodWith runs a pod of the given namespaces, and a busybox sleeping in
// it, and returns the pod's id once the container has started.
func startPodWith(ctx context.Context, b *testing.B, rt runtimeapi.RuntimeServiceClient, image, uid string, ns *runtimeapi.NamespaceOption) string {
	b.Helper()
	pod := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "netbench", Namespace: "bench", Uid: uid},
		Linux:    &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: ns}},
	}
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pod})
	if err != nil {
		b.Fatal(err)
	}
	ctr, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId:  sb.PodSandboxId,
		SandboxConfig: pod,
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
		b.Fatal(err)
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ctr.ContainerId}); err != nil {
		b.Fatal(err)
	}
	return sb.PodSandboxId
}

func removePod(ctx context.Context, b *testing.B, rt runtimeapi.RuntimeServiceClient, id string) {
	b.Helper()
	if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		b.Fatal(err)
	}
	if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		b.Fatal(err)
	}
}
