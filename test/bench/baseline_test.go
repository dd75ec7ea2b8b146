package bench

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// containerdEndpoint is the baseline containerd of ../shared/conformance
// (containerd-up.sh), or CRIB_BENCH_CONTAINERD.
func containerdEndpoint() string {
	if ep := os.Getenv("CRIB_BENCH_CONTAINERD"); ep != "" {
		return ep
	}
	return "/run/cri-conformance/ctrd16/containerd.sock"
}

// baseline is the containerd crib is measured against, over its CRI.
type baseline struct {
	sock    string
	Runtime runtimeapi.RuntimeServiceClient
	Images  runtimeapi.ImageServiceClient
}

// dialBaseline connects to the baseline containerd, or logs that it is not
// running and returns nil: the benchmark then measures crib alone. The
// connection closes at the benchmark's end.
func dialBaseline(b *testing.B) *baseline {
	b.Helper()
	sock := containerdEndpoint()
	if _, err := os.Stat(sock); err != nil {
		b.Logf("no baseline containerd at %s (../shared/conformance/containerd-up.sh): crib only", sock)
		return nil
	}
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return &baseline{
		sock:    sock,
		Runtime: runtimeapi.NewRuntimeServiceClient(conn),
		Images:  runtimeapi.NewImageServiceClient(conn),
	}
}

// pull puts ref into containerd's store (a no-op when it is there).
func (c *baseline) pull(ctx context.Context, b *testing.B, ref string) {
	b.Helper()
	if _, err := c.Images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		b.Fatalf("pull %s into containerd: %v", ref, err)
	}
}

// pid is containerd's, from the pid file containerd-up.sh writes beside
// its socket.
func (c *baseline) pid(b *testing.B) int {
	b.Helper()
	data, err := os.ReadFile(filepath.Join(filepath.Dir(c.sock), "containerd.pid"))
	if err != nil {
		b.Fatalf("baseline containerd's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		b.Fatalf("baseline containerd's pid: %v", err)
	}
	return pid
}

// procs are containerd and its shims, which carry its socket on their
// command lines.
func (c *baseline) procs(b *testing.B) []int {
	b.Helper()
	return append([]int{c.pid(b)}, pidsWhere(func(exe, cmdline string) bool {
		return strings.HasPrefix(filepath.Base(exe), "containerd-shim") && strings.Contains(cmdline, c.sock)
	})...)
}

// rssMiB is the resident set of containerd and its shims.
func (c *baseline) rssMiB(b *testing.B) float64 {
	b.Helper()
	var sum float64
	for _, pid := range c.procs(b) {
		sum += rssMiB(b, pid)
	}
	return sum
}

// requireRegistry skips the benchmark when the loopback registry of
// ../shared/conformance/images.sh is not up.
func requireRegistry(b *testing.B) {
	b.Helper()
	conn, err := net.DialTimeout("tcp", "127.0.0.1:5000", time.Second)
	if err != nil {
		b.Skip("the loopback registry is not up (../shared/conformance/images.sh)")
	}
	conn.Close()
}

// registryBusybox is the loopback registry's busybox, which crib and the
// baseline containerd both pull through their registry.k8s.io mirror, so
// that both start the same image.
var registryBusybox = testutil.TestImage{
	Ref:     testutil.RegistryBusyboxRef,
	Mirrors: map[string][]string{"registry.k8s.io": {testutil.LoopbackRegistry}},
}
