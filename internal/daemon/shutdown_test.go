package daemon

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/config"
	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/testutil"
)

// TestShutdownLeavesContainersRunning: Shutdown, called while Run serves,
// ends the event streams, makes Run return, removes both sockets and
// leaves a running container running; the next daemon adopts it.
func TestShutdownLeavesContainersRunning(t *testing.T) {
	testutil.RequiresRoot(t)
	if _, err := os.Stat("/usr/sbin/runc"); err != nil {
		t.Skip("needs runc")
	}
	monitorBin := testutil.MonitorBinary(testutil.BuildCrib(t))
	img := testutil.Busybox(t)
	// Monitor sockets live under the state dir: t.TempDir() is too long
	// for a unix socket's path.
	dir, err := os.MkdirTemp("/tmp", "crib-dt-")
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	cfg.Root, cfg.State = filepath.Join(dir, "root"), filepath.Join(dir, "run")
	cfg.Socket = filepath.Join(cfg.State, "crib.sock")
	cfg.CgroupParent = "/" + filepath.Base(dir)
	cfg.Registries = registryMirrors(img.Mirrors)
	t.Cleanup(func() {
		for _, d := range testutil.CgroupDirs(cfg.CgroupParent) {
			if err := testutil.RemoveCgroupTree(d); err != nil {
				t.Errorf("remove test cgroup: %v", err)
			}
		}
		os.RemoveAll(dir)
	})
	if img.Tarball != "" {
		loadImage(t, filepath.Join(cfg.Root, "images"), img.Tarball)
	}

	first := startDaemon(t, cfg, monitorBin)
	rt := first.client(t)
	if img.Tarball == "" {
		if _, err := runtimeapi.NewImageServiceClient(first.conn).PullImage(first.ctx(t), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: img.Ref}}); err != nil {
			t.Fatalf("pull %s: %v", img.Ref, err)
		}
	}
	podID, ctrID := runSleeper(t, first, rt, img.Ref, filepath.Join(dir, "logs"))
	pid := containerPid(t, first, rt, ctrID)
	events, err := rt.GetContainerEvents(context.Background(), &runtimeapi.GetEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	if err := first.d.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	select {
	case err := <-first.runErr:
		if err != nil {
			t.Errorf("Run after Shutdown = %v", err)
		}
	case <-time.After(testutil.Patience(30 * time.Second)):
		t.Fatal("Run did not return after Shutdown")
	}
	if _, err := events.Recv(); err == nil {
		t.Error("the event stream is still open after Shutdown")
	}
	for _, sock := range []string{cfg.Socket, first.d.apiSocket()} {
		if _, err := os.Stat(sock); !os.IsNotExist(err) {
			t.Errorf("socket %s left after Shutdown: %v", sock, err)
		}
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the container (pid %d) did not survive Shutdown: %v", pid, err)
	}

	second := startDaemon(t, cfg, monitorBin)
	rt = second.client(t)
	st, err := rt.ContainerStatus(second.ctx(t), &runtimeapi.ContainerStatusRequest{ContainerId: ctrID})
	if err != nil || st.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("container after a new start: %v, %v; want RUNNING", st.GetStatus().GetState(), err)
	}
	if _, err := rt.StopPodSandbox(second.ctx(t), &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Errorf("StopPodSandbox: %v", err)
	}
	if _, err := rt.RemovePodSandbox(second.ctx(t), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Errorf("RemovePodSandbox: %v", err)
	}
}

// testDaemon is a Daemon serving in the background.
type testDaemon struct {
	d      *Daemon
	runErr chan error
	conn   *grpc.ClientConn
}

// startDaemon builds a daemon on cfg and serves it until Shutdown, which
// the test's cleanup calls too.
func startDaemon(t *testing.T, cfg config.Config, monitorBin string) *testDaemon {
	t.Helper()
	d, err := New(context.Background(), cfg, monitorBin, quiet())
	if err != nil {
		t.Fatal(err)
	}
	td := &testDaemon{d: d, runErr: make(chan error, 1)}
	t.Cleanup(func() {
		if td.conn != nil {
			td.conn.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
		defer cancel()
		_ = d.Shutdown(ctx)
	})
	go func() { td.runErr <- d.Run(context.Background()) }()
	select {
	case <-d.Ready():
	case err := <-td.runErr:
		t.Fatalf("Run = %v before serving", err)
	case <-time.After(testutil.Patience(60 * time.Second)):
		t.Fatal("the daemon did not serve within a minute")
	}
	return td
}

func (td *testDaemon) client(t *testing.T) runtimeapi.RuntimeServiceClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+td.d.cfg.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	td.conn = conn
	return runtimeapi.NewRuntimeServiceClient(conn)
}

// ctx bounds one call.
func (td *testDaemon) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// runSleeper runs a host-network pod (no CNI involved) with one busybox
// container that sleeps until stopped, and returns their ids.
func runSleeper(t *testing.T, td *testDaemon, rt runtimeapi.RuntimeServiceClient, ref, logDir string) (string, string) {
	t.Helper()
	pod := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "sleeper", Namespace: "daemon-test", Uid: "uid-sleeper"},
		LogDirectory: logDir,
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_CONTAINER},
		}},
	}
	podResp, err := rt.RunPodSandbox(td.ctx(t), &runtimeapi.RunPodSandboxRequest{Config: pod})
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	ctr := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "sleeper"},
		Image:    &runtimeapi.ImageSpec{Image: ref},
		// PID 1 ignores SIGTERM unless it traps it: the stop at the end
		// then takes no grace period.
		Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"},
		LogPath: "sleeper.log",
	}
	ctrResp, err := rt.CreateContainer(td.ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: podResp.PodSandboxId, Config: ctr, SandboxConfig: pod})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if _, err := rt.StartContainer(td.ctx(t), &runtimeapi.StartContainerRequest{ContainerId: ctrResp.ContainerId}); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	return podResp.PodSandboxId, ctrResp.ContainerId
}

// containerPid is the host pid of a running container's init.
func containerPid(t *testing.T, td *testDaemon, rt runtimeapi.RuntimeServiceClient, id string) int {
	t.Helper()
	st, err := rt.ContainerStatus(td.ctx(t), &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	var info struct{ Pid int }
	if err := json.Unmarshal([]byte(st.Info["info"]), &info); err != nil || info.Pid == 0 {
		t.Fatalf("container %s has no pid in %q: %v", id, st.Info["info"], err)
	}
	return info.Pid
}

// loadImage loads an image tarball into the image store at root, before
// any daemon owns it.
func loadImage(t *testing.T, root, tarball string) {
	t.Helper()
	ctx := context.Background()
	store, err := image.Open(ctx, image.Config{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	f, err := os.Open(tarball)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := store.Load(ctx, f); err != nil {
		t.Fatalf("load %s: %v", tarball, err)
	}
}

// registryMirrors configures mirrors (host -> endpoints).
func registryMirrors(mirrors map[string][]string) map[string]config.Registry {
	out := map[string]config.Registry{}
	for host, m := range mirrors {
		out[host] = config.Registry{Mirrors: m}
	}
	return out
}
