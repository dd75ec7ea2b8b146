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

// BenchmarkPodStartUserNamespace measures, alternately in each iteration,
// the time from RunPodSandbox to a running busybox container for a crib
// pod on a CNI bridge with the host's users and the same pod in a user
// namespace of its own (hostUsers: false: its namespaces made inside it,
// an id-mapped rootfs, id-mapped binds). It reports both and their ratio;
// teardown is not timed. It needs a runc with id-mapped mounts in PATH
// (../shared/conformance/build-runc.sh).
func BenchmarkPodStartUserNamespace(b *testing.B) {
	testutil.RequiresRoot(b)
	img := testutil.Busybox(b)
	d := testutil.StartDaemon(b, testutil.Options{Image: &img, LogLevel: os.Getenv("CRIB_BENCH_LOG")})
	ctx := context.Background()
	st, err := d.Runtime.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		b.Fatal(err)
	}
	if !st.RuntimeHandlers[0].GetFeatures().GetUserNamespaces() {
		b.Skip("the runtime has no user namespaces here (a runc with id-mapped mounts is needed in PATH)")
	}
	mapping := []*runtimeapi.IDMapping{{ContainerId: 0, HostId: 1 << 20, Length: 1 << 16}}
	var host, userns time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, run := range []struct {
			total *time.Duration
			ns    *runtimeapi.NamespaceOption
		}{
			{&host, &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER}},
			{&userns, &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER, UsernsOptions: &runtimeapi.UserNamespace{
				Mode: runtimeapi.NamespaceMode_POD, Uids: mapping, Gids: mapping,
			}}},
		} {
			settle(b)
			start := time.Now()
			id := startPodWith(ctx, b, d.Runtime, img.Ref, fmt.Sprintf("userns-%v-%d", run.ns.UsernsOptions != nil, i), run.ns)
			*run.total += time.Since(start)
			b.StopTimer()
			removePod(ctx, b, d.Runtime, id)
			b.StartTimer()
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(host.Microseconds())/n, "host-users-µs/pod")
	b.ReportMetric(float64(userns.Microseconds())/n, "userns-µs/pod")
	b.ReportMetric(float64(userns)/float64(host), "userns/host-users")
}
