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

	"github.com/crib-dev/crib/internal/ociruntime"
	"github.com/crib-dev/crib/internal/testutil"
)

// memoryHolder fills about 100 MiB of a shell's memory with touched pages
// (a variable), says so, and waits.
var memoryHolder = []string{"sh", "-c", `x=$(head -c 104857600 /dev/zero | tr '\0' a); echo ready > /tmp/ready; while true; do sleep 1; done`}

// BenchmarkCheckpointRestore measures, in each iteration, a checkpoint of
// a busybox shell holding ~100 MiB of touched memory and its restore
// into a new pod through crib (CheckpointContainer, the container left
// running; CreateContainer from the archive and StartContainer), against
// bare `runc checkpoint --leave-running` and `runc restore --detach` of
// the same command on the same image (the floor), with the same CRIU. It
// reports each and the ratios crib/runc.
func BenchmarkCheckpointRestore(b *testing.B) {
	testutil.RequiresRoot(b)
	requireRegistry(b)
	criu, why := testutil.FindDumpingCriu()
	if criu == "" {
		b.Skip(why)
	}
	img := registryBusybox
	d := testutil.StartDaemon(b, testutil.Options{Image: &img, LogLevel: "warn", ExtraConfig: testutil.CriuConfig()})
	ctx := context.Background()
	bundle := runcBundle(b, d, img.Ref)
	holderBundle(b, bundle)
	runcRoot := b.TempDir()
	env := ociruntime.CriuEnv(os.Environ(), criu, true)
	runc := func(args ...string) {
		b.Helper()
		cmd := exec.Command("runc", append([]string{"--root", runcRoot}, args...)...)
		cmd.Env = env
		// A detached container inherits runc's stdio: files, not pipes,
		// so that runc returns and CRIU can reopen them.
		devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer devnull.Close()
		cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
		if err := cmd.Run(); err != nil {
			out, _ := exec.Command("sh", "-c", "cat "+filepath.Join(bundle, "*.log")+" 2>/dev/null | tail -5").CombinedOutput()
			b.Fatalf("runc %v: %v\n%s", args, err, out)
		}
	}
	waitReady := func(pid int) {
		b.Helper()
		p := fmt.Sprintf("/proc/%d/root/tmp/ready", pid)
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if _, err := os.Stat(p); err == nil {
				return
			}
		}
		b.Fatalf("the memory holder did not fill its memory")
	}

	var cribCkpt, cribRestore, runcCkpt, runcRestore time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		pod, ctr := podConfigs(img.Ref, fmt.Sprintf("ckpt-bench-%d", i), hostNetwork)
		ctr.Command = memoryHolder
		podID, err := runPod(ctx, d.Runtime, pod, ctr)
		if err != nil {
			b.Fatal(err)
		}
		list, err := d.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: podID}})
		if err != nil || len(list.Containers) != 1 {
			b.Fatalf("the pod's container: %v %v", list, err)
		}
		id := list.Containers[0].Id
		st, err := d.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
		if err != nil {
			b.Fatal(err)
		}
		var info struct{ Pid int }
		_ = json.Unmarshal([]byte(st.Info["info"]), &info)
		waitReady(info.Pid)
		archive := filepath.Join(b.TempDir(), "c.tar")
		b.StartTimer()

		start := time.Now()
		if _, err := d.Runtime.CheckpointContainer(ctx, &runtimeapi.CheckpointContainerRequest{ContainerId: id, Location: archive}); err != nil {
			b.Fatalf("CheckpointContainer: %v", err)
		}
		cribCkpt += time.Since(start)

		b.StopTimer()
		dpod, dctr := podConfigs(archive, fmt.Sprintf("ckpt-bench-dst-%d", i), hostNetwork)
		dctr.Command = memoryHolder
		b.StartTimer()
		start = time.Now()
		dstID, err := runPod(ctx, d.Runtime, dpod, dctr)
		if err != nil {
			b.Fatalf("restore: %v", err)
		}
		cribRestore += time.Since(start)

		b.StopTimer()
		removePod(ctx, b, d.Runtime, podID)
		removePod(ctx, b, d.Runtime, dstID)
		src, dst := fmt.Sprintf("ckpt-src-%d", i), fmt.Sprintf("ckpt-dst-%d", i)
		runc("run", "-d", "--bundle", bundle, src)
		state, err := exec.Command("runc", "--root", runcRoot, "state", src).Output()
		if err != nil {
			b.Fatal(err)
		}
		var rs struct{ Pid int }
		_ = json.Unmarshal(state, &rs)
		waitReady(rs.Pid)
		images := b.TempDir()
		b.StartTimer()

		start = time.Now()
		runc("checkpoint", "--leave-running", "--image-path", images, "--work-path", images, src)
		runcCkpt += time.Since(start)
		b.StopTimer()
		runc("delete", "--force", src)
		b.StartTimer()
		start = time.Now()
		runc("restore", "--detach", "--image-path", images, "--work-path", images, "--bundle", bundle, dst)
		runcRestore += time.Since(start)

		b.StopTimer()
		runc("delete", "--force", dst)
		b.StartTimer()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(cribCkpt.Milliseconds())/n, "crib-ckpt-ms")
	b.ReportMetric(float64(runcCkpt.Milliseconds())/n, "runc-ckpt-ms")
	b.ReportMetric(float64(cribRestore.Milliseconds())/n, "crib-restore-ms")
	b.ReportMetric(float64(runcRestore.Milliseconds())/n, "runc-restore-ms")
	b.ReportMetric(float64(cribCkpt)/float64(runcCkpt), "ckpt-crib/runc")
	b.ReportMetric(float64(cribRestore)/float64(runcRestore), "restore-crib/runc")
}

// holderBundle makes the bundle's process the memory holder, with a
// writable /tmp (its rootfs is read-only).
func holderBundle(b *testing.B, bundle string) {
	b.Helper()
	p := filepath.Join(bundle, "config.json")
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		b.Fatal(err)
	}
	spec.Process.Args = memoryHolder
	spec.Mounts = append(spec.Mounts, specs.Mount{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "size=1m"}})
	out, err := json.Marshal(spec)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, out, 0o644); err != nil {
		b.Fatal(err)
	}
}
