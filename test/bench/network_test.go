package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// baselineConfList is the network containerd-up.sh gives the baseline
// containerd: bridge (no masquerade, hairpin), host-local and portmap
// (containerd adds loopback itself; crib brings lo up without a plugin).
// The bridge's options must be the baseline's: ipMasq adds and deletes an
// iptables chain per pod, whose lock dominates a CNI DEL on a busy host.
const baselineConfList = `{
  "cniVersion": "1.0.0",
  "name": "{{.Bridge}}",
  "plugins": [
    {"type": "bridge", "bridge": "{{.Bridge}}", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "{{.DataDir}}", "ranges": [[{"subnet": "{{.Subnet}}"}]]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}`

// BenchmarkPodStartNetwork measures, alternately in each iteration, the
// time from RunPodSandbox to a running busybox container for: a crib pod on
// the host network, a crib pod on a CNI bridge, and, when the baseline
// containerd runs, a containerd pod on a CNI bridge with the same plugins.
// It reports each and the ratios; teardown is not timed.
func BenchmarkPodStartNetwork(b *testing.B) {
	testutil.RequiresRoot(b)
	requireRegistry(b)
	img := registryBusybox
	d := testutil.StartDaemon(b, testutil.Options{Image: &img, LogLevel: os.Getenv("CRIB_BENCH_LOG"), CNIConfList: baselineConfList})
	ctx := context.Background()

	var ctrd runtimeapi.RuntimeServiceClient
	if c := dialBaseline(b); c != nil {
		c.pull(ctx, b, img.Ref)
		ctrd = c.Runtime
		// A first pod pulls containerd's pause image outside the timing.
		removePod(ctx, b, ctrd, startNetPod(ctx, b, ctrd, img.Ref, "warm", false))
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
	pod, ctr := podConfigs(image, uid, ns)
	id, err := runPod(ctx, rt, pod, ctr)
	if err != nil {
		b.Fatal(err)
	}
	return id
}

// addContainer creates and starts one more busybox sleeping, named name,
// in the pod podID of uid (a pod of podConfigs).
func addContainer(ctx context.Context, b *testing.B, rt runtimeapi.RuntimeServiceClient, podID, image, uid, name string, ns *runtimeapi.NamespaceOption) {
	b.Helper()
	pod, ctr := podConfigs(image, uid, ns)
	ctr.Metadata.Name = name
	c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: podID, SandboxConfig: pod, Config: ctr})
	if err != nil {
		b.Fatalf("create container %s in pod %s: %v", name, uid, err)
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
		b.Fatalf("start container %s in pod %s: %v", name, uid, err)
	}
}

// podConfigs are the configs of a pod of the given namespaces whose one
// container is a busybox sleeping.
func podConfigs(image, uid string, ns *runtimeapi.NamespaceOption) (*runtimeapi.PodSandboxConfig, *runtimeapi.ContainerConfig) {
	pod := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "netbench", Namespace: "bench", Uid: uid},
		Linux:    &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: ns}},
	}
	ctr := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "sleep"},
		Image:    &runtimeapi.ImageSpec{Image: image},
		Command:  []string{"sleep", "3600"},
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: ns,
		}},
	}
	return pod, ctr
}

// runPod runs the pod, creates its container and starts it, and returns
// the pod's id.
func runPod(ctx context.Context, rt runtimeapi.RuntimeServiceClient, pod *runtimeapi.PodSandboxConfig, ctr *runtimeapi.ContainerConfig) (string, error) {
	return runPodOn(ctx, rt, "", pod, ctr)
}

func removePod(ctx context.Context, b *testing.B, rt runtimeapi.RuntimeServiceClient, id string) {
	b.Helper()
	if err := stopAndRemove(ctx, rt, id); err != nil {
		b.Fatal(err)
	}
}

// stopAndRemove stops the pod and removes it.
func stopAndRemove(ctx context.Context, rt runtimeapi.RuntimeServiceClient, id string) error {
	if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("stop pod %s: %w", id, err)
	}
	if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("remove pod %s: %w", id, err)
	}
	return nil
}
