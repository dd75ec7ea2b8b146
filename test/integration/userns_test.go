package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// usernsRange is the size of each test pod's id range, as the kubelet's.
const usernsRange = 65536

// requireUserNamespaces skips the test unless the daemon's default handler
// runs pods in user namespaces of their own (a runc with id-mapped mounts:
// ../shared/conformance/build-runc.sh). With CRIB_REQUIRE_USERNS set, as
// scripts/test.sh sets it, a missing feature fails the test instead.
func (e *env) requireUserNamespaces() {
	e.t.Helper()
	st, err := e.rt().Status(e.ctx(), &runtimeapi.StatusRequest{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, h := range st.RuntimeHandlers {
		if h.Name == "" && h.Features.GetUserNamespaces() {
			return
		}
	}
	why := "the default runtime handler has no user namespaces (runc 1.2 or later is needed; see the daemon log for what is missing)"
	if os.Getenv("CRIB_REQUIRE_USERNS") != "" {
		e.t.Fatalf("%s\n%s", why, e.d.ReadLog())
	}
	e.t.Skip(why)
}

// usernsOptions maps container ids 0..65535 to host ids from hostID.
func usernsOptions(hostID uint32) *runtimeapi.UserNamespace {
	m := []*runtimeapi.IDMapping{{ContainerId: 0, HostId: hostID, Length: usernsRange}}
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: m, Gids: m}
}

// usernsPod is a pod named name in its own user namespace from hostID; its
// containers must be made with usernsCtr.
func (e *env) usernsPod(name string, hostID uint32) *runtimeapi.PodSandboxConfig {
	pod := e.podConfig(name)
	pod.Linux.SecurityContext.NamespaceOptions.UsernsOptions = usernsOptions(hostID)
	return pod
}

// usernsCtr is a container of pod, as the kubelet sends it: with the pod's
// user namespace options (and its PID and network modes).
func (e *env) usernsCtr(pod *runtimeapi.PodSandboxConfig, name string, cmd ...string) *runtimeapi.ContainerConfig {
	cfg := e.ctrConfig(name, cmd...)
	cfg.Linux.SecurityContext.NamespaceOptions.UsernsOptions = pod.Linux.SecurityContext.NamespaceOptions.UsernsOptions
	cfg.Linux.SecurityContext.NamespaceOptions.Pid = pod.Linux.SecurityContext.NamespaceOptions.Pid
	cfg.Linux.SecurityContext.NamespaceOptions.Network = pod.Linux.SecurityContext.NamespaceOptions.Network
	return cfg
}

// pidOf is the host pid of a running container, from its verbose status.
func (e *env) pidOf(id string) int {
	e.t.Helper()
	resp, err := e.rt().ContainerStatus(e.ctx(), &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		e.t.Fatal(err)
	}
	var info struct{ Pid int }
	if err := json.Unmarshal([]byte(resp.Info["info"]), &info); err != nil || info.Pid == 0 {
		e.t.Fatalf("container %s: no pid in %q: %v", id, resp.Info["info"], err)
	}
	return info.Pid
}

// hostOwner is the uid and gid that own path on the host.
func hostOwner(t *testing.T, path string) (uint32, uint32) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Uid, st.Gid
}

// execOut runs cmd in container id and returns its trimmed stdout, failing
// the test unless it exits 0.
func (e *env) execOut(id string, cmd ...string) string {
	e.t.Helper()
	out := e.exec(id, cmd...)
	if out.ExitCode != 0 {
		e.t.Fatalf("%v in %.12s: exit %d: %s%s", cmd, id, out.ExitCode, out.Stdout, out.Stderr)
	}
	return strings.TrimSpace(string(out.Stdout))
}

func TestUserNamespacePod(t *testing.T) {
	e := newEnv(t)
	e.requireUserNamespaces()
	const hostID = 7 << 16

	// An emptyDir as the kubelet makes one (root's, mode 0777), a
	// hostPath owned by root, and one owned by a host uid the pod does not
	// map.
	emptyDir := filepath.Join(e.d.Dir, "volumes", "empty")
	hostPath := filepath.Join(e.d.Dir, "volumes", "host")
	unmapped := filepath.Join(e.d.Dir, "volumes", "unmapped")
	for dir, mode := range map[string]os.FileMode{emptyDir: 0o777, hostPath: 0o755, unmapped: 0o755} {
		if err := os.MkdirAll(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(unmapped, 3<<16, 3<<16); err != nil {
		t.Fatal(err)
	}

	pod := e.usernsPod("userns", hostID)
	// A namespaced sysctl applies in the pod's network namespace, which its
	// user namespace owns.
	pod.Linux.Sysctls = map[string]string{"net.core.somaxconn": "1234"}
	podID := e.runPod(pod)
	st, err := e.rt().PodSandboxStatus(e.ctx(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: podID})
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Status.GetLinux().GetNamespaces().GetOptions().GetUsernsOptions(); !proto.Equal(got, pod.Linux.SecurityContext.NamespaceOptions.UsernsOptions) {
		t.Errorf("PodSandboxStatus userns_options = %v, want the pod's %v", got, pod.Linux.SecurityContext.NamespaceOptions.UsernsOptions)
	}
	cfg := e.usernsCtr(pod, "app", "sleep", "3600")
	// The kubelet sends the pod's mappings with every mount; critest
	// sends none. Both mean the pod's.
	userns := pod.Linux.SecurityContext.NamespaceOptions.UsernsOptions
	cfg.Mounts = []*runtimeapi.Mount{
		{ContainerPath: "/empty", HostPath: emptyDir, UidMappings: userns.Uids, GidMappings: userns.Gids},
		{ContainerPath: "/host", HostPath: hostPath},
		{ContainerPath: "/unmapped", HostPath: unmapped, UidMappings: userns.Uids, GidMappings: userns.Gids},
	}
	id := e.run(podID, pod, cfg)
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, testutil.Patience(10*time.Second))

	// Inside, the pod's root is root.
	if got := e.execOut(id, "id", "-u"); got != "0" {
		t.Errorf("id -u in the pod = %q, want 0", got)
	}
	if got := strings.Fields(e.execOut(id, "cat", "/proc/self/uid_map")); strings.Join(got, " ") != fmt.Sprintf("0 %d %d", hostID, usernsRange) {
		t.Errorf("uid_map in the pod = %v, want 0 %d %d", got, hostID, usernsRange)
	}
	if got := e.execOut(id, "cat", "/proc/sys/net/core/somaxconn"); got != "1234" {
		t.Errorf("net.core.somaxconn in the pod = %q, want the pod's sysctl 1234", got)
	}
	if got := e.execOut(id, "hostname"); got != pod.Hostname {
		t.Errorf("hostname in the pod = %q, want %q", got, pod.Hostname)
	}
	// On the host, it is the mapped uid.
	pid := e.pidOf(id)
	statusFile, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(statusFile), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && (k == "Uid" || k == "Gid") {
			want := strings.Repeat(strconv.Itoa(hostID)+" ", 4)
			if got := strings.Join(strings.Fields(v), " ") + " "; got != want {
				t.Errorf("host /proc/%d/status %s = %q, want %q", pid, k, got, want)
			}
		}
	}
	// The image's files are root's inside, though the layers on the host
	// are shared and unchanged.
	if got := strings.Fields(e.execOut(id, "stat", "-c", "%u:%g", "/bin/sh", "/etc")); strings.Join(got, " ") != "0:0 0:0" {
		t.Errorf("owner of the image's files in the pod = %q, want 0:0", got)
	}

	// What the pod's root writes: in its rootfs it is stored as the mapped
	// uid; in its volumes, which are id-mapped as under containerd, as the
	// host's root, so that volumes keep working across pods and ranges.
	e.execOut(id, "sh", "-c", "touch /rootfs-file /empty/file /host/file")
	for _, f := range []string{"/rootfs-file", "/empty/file", "/host/file"} {
		if got := e.execOut(id, "stat", "-c", "%u:%g", f); got != "0:0" {
			t.Errorf("owner of %s in the pod = %q, want 0:0", f, got)
		}
	}
	upper := filepath.Join(e.d.Root, "containers", id, "fs", "rootfs-file")
	if uid, gid := hostOwner(t, upper); uid != hostID || gid != hostID {
		t.Errorf("owner of the pod's rootfs file on the host = %d:%d, want %d:%d", uid, gid, hostID, hostID)
	}
	for _, f := range []string{filepath.Join(emptyDir, "file"), filepath.Join(hostPath, "file")} {
		if uid, gid := hostOwner(t, f); uid != 0 || gid != 0 {
			t.Errorf("owner of %s on the host = %d:%d, want 0:0 (the pod's root through the id-mapped mount)", f, uid, gid)
		}
	}
	// The pod's own files are its root's: /etc/hosts and the rest, and
	// /dev/shm, where what it writes is stored as the mapped uid.
	e.execOut(id, "sh", "-c", "echo 10.0.0.9 extra >> /etc/hosts && touch /dev/shm/file")
	if got := strings.Fields(e.execOut(id, "stat", "-c", "%u:%g", "/etc/hosts", "/etc/resolv.conf", "/etc/hostname", "/dev/shm", "/dev/shm/file")); strings.Join(got, " ") != "0:0 0:0 0:0 0:0 0:0" {
		t.Errorf("owners of the pod's files in the pod = %v, want the pod's root", got)
	}
	shmFile := fmt.Sprintf("/proc/%d/root/dev/shm/file", pid)
	if uid, gid := hostOwner(t, shmFile); uid != hostID || gid != hostID {
		t.Errorf("owner of a /dev/shm file on the host = %d:%d, want %d:%d", uid, gid, hostID, hostID)
	}

	// A host directory of an unmapped uid is nobody's inside and not
	// writable, even by the pod's root.
	if out := e.exec(id, "touch", "/unmapped/file"); out.ExitCode == 0 {
		t.Errorf("the pod's root wrote to a directory of an unmapped host uid")
	}
	if _, err := os.Stat(filepath.Join(unmapped, "file")); err == nil {
		t.Errorf("%s/file exists on the host", unmapped)
	}

	// A second pod with another range runs as its own uids.
	const otherID = 9 << 16
	pod2 := e.usernsPod("userns-2", otherID)
	pod2ID := e.runPod(pod2)
	id2 := e.run(pod2ID, pod2, e.usernsCtr(pod2, "app", "sleep", "3600"))
	e.waitState(id2, runtimeapi.ContainerState_CONTAINER_RUNNING, testutil.Patience(10*time.Second))
	if got := strings.Fields(e.execOut(id2, "cat", "/proc/self/uid_map")); got[1] != strconv.Itoa(otherID) {
		t.Errorf("second pod's uid_map = %v, want host id %d", got, otherID)
	}
	e.removeAllAndCheck(t)
}

// suidImage is an image whose /suid is a static program, setuid root, that
// prints its real and effective uids.
const suidImage = "test.local/userns/suid:1"

func suidImageTarball(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	prog := "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc main() { fmt.Printf(\"uid=%d euid=%d\\n\", os.Getuid(), os.Geteuid()) }\n"
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "suid")
	build := exec.Command("go", "build", "-o", bin, src)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the setuid program: %v: %s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "suid", Typeflag: tar.TypeReg, Mode: 0o4755, Size: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(suidImage)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "suid.tar")
	if err := tarball.WriteToFile(out, tag, img); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestUserNamespaceSetuidAndSharedPID(t *testing.T) {
	e := newEnv(t)
	e.requireUserNamespaces()
	e.d.LoadImage(t, suidImageTarball(t))

	pod := e.usernsPod("userns-suid", 11<<16)
	// One PID namespace for the pod: its pause is made in the pod's user
	// namespace too.
	pod.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_POD
	podID := e.runPod(pod)

	cfg := e.usernsCtr(pod, "suid", "/suid")
	cfg.Image = &runtimeapi.ImageSpec{Image: suidImage}
	cfg.Linux.SecurityContext.RunAsUser = &runtimeapi.Int64Value{Value: 1000}
	id := e.run(podID, pod, cfg)
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, testutil.Patience(10*time.Second))
	log := waitLog(t, filepath.Join(pod.LogDirectory, "suid.log"), "euid=", testutil.Patience(5*time.Second))
	if !strings.Contains(log, "uid=1000 euid=0") {
		t.Errorf("the setuid program in the pod printed %q, want uid=1000 euid=0", log)
	}

	sleeper := e.run(podID, pod, e.usernsCtr(pod, "sleeper", "sleep", "3600"))
	e.waitState(sleeper, runtimeapi.ContainerState_CONTAINER_RUNNING, testutil.Patience(10*time.Second))
	if got := e.execOut(sleeper, "cat", "/proc/1/cmdline"); !strings.Contains(got, "pause") {
		t.Errorf("pid 1 of the shared PID namespace is %q, want the pod's pause", got)
	}
	// The pod's PID 1 does not hold the host's file system: the pod's root
	// could reach it through /proc/1/root.
	st, err := e.rt().PodSandboxStatus(e.ctx(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: podID, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	var info struct{ Pid int }
	if err := json.Unmarshal([]byte(st.Info["info"]), &info); err != nil || info.Pid == 0 {
		t.Fatalf("no pause pid in %q: %v", st.Info["info"], err)
	}
	if entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/root", info.Pid)); err != nil || len(entries) != 0 {
		t.Errorf("the pause's root holds %v (%v), want an empty root", entries, err)
	}
	if got := e.execOut(sleeper, "id", "-u"); got != "0" {
		t.Errorf("id -u in the shared-PID pod = %q, want 0", got)
	}
	e.removeAllAndCheck(t)
}

func TestUserNamespaceRefusedWithoutSupport(t *testing.T) {
	testutil.RequiresRoot(t)
	t.Parallel()
	img := testutil.Busybox(t)
	// Debian's runc 1.1.5 has no id-mapped mounts.
	d := testutil.StartDaemon(t, testutil.Options{Image: &img, ExtraConfig: "[runtimes.debian]\npath = \"/usr/sbin/runc\"\n"})
	e := &env{t: t, d: d, img: img}
	st, err := e.rt().Status(e.ctx(), &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range st.RuntimeHandlers {
		if h.Name == "debian" && h.Features.GetUserNamespaces() {
			t.Skip("this host's /usr/sbin/runc has id-mapped mounts")
		}
	}
	pod := e.usernsPod("userns-refused", 13<<16)
	_, err = e.rt().RunPodSandbox(e.ctx(), &runtimeapi.RunPodSandboxRequest{Config: pod, RuntimeHandler: "debian"})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "id-mapped mounts") {
		t.Fatalf("RunPodSandbox in a user namespace on runc 1.1.5 = %v, want FailedPrecondition naming id-mapped mounts", err)
	}
	if !strings.Contains(err.Error(), "userns_options") {
		t.Errorf("error %q does not name the field", err)
	}
	// The same pod on the host's users runs on that handler.
	pod.Linux.SecurityContext.NamespaceOptions.UsernsOptions = &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}
	if _, err := e.rt().RunPodSandbox(e.ctx(), &runtimeapi.RunPodSandboxRequest{Config: pod, RuntimeHandler: "debian"}); err != nil {
		t.Fatalf("RunPodSandbox with mode NODE on runc 1.1.5: %v", err)
	}
	e.removeAllAndCheck(t)
}

// TestCrashDuringUserNamespacePod SIGKILLs the daemon at spread points of
// a user-namespace pod's creation (its namespaces made by a child inside
// the new user namespace, the id-mapped rootfs, the container's start), as
// crash_test.go does for host-user pods; every third pod is on the host's
// network. After each restart what is listed
// works or is removed, and nothing is left: no mount (the mapped layers are
// mounts too while the overlay is made), pause, runc container or cgroup.
func TestCrashDuringUserNamespacePod(t *testing.T) {
	e := newEnv(t)
	e.requireUserNamespaces()
	pod := func(i int) *runtimeapi.PodSandboxConfig {
		p := e.usernsPod(fmt.Sprintf("crash-userns-%d", i), uint32(20+i)<<16)
		if i%2 == 1 {
			p.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_POD
		}
		if i%3 == 2 {
			p.Linux.SecurityContext.NamespaceOptions.Network = runtimeapi.NamespaceMode_NODE
		}
		return p
	}
	whole := func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, p *runtimeapi.PodSandboxConfig) rpcResult {
		resp, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: p})
		if err != nil {
			return rpcResult{err: fmt.Errorf("run pod: %w", err)}
		}
		c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
			PodSandboxId: resp.PodSandboxId, Config: e.usernsCtr(p, "c", "sh", "-c", "echo up; sleep 3600"), SandboxConfig: p,
		})
		if err != nil {
			return rpcResult{err: fmt.Errorf("create: %w", err)}
		}
		if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
			return rpcResult{err: fmt.Errorf("start: %w", err)}
		}
		return rpcResult{id: c.ContainerId}
	}
	start := time.Now()
	if res := whole(e.ctx(), e.rt(), pod(0)); res.err != nil {
		t.Fatal(res.err)
	}
	took := time.Since(start)
	e.removeAllAndCheck(t)
	t.Logf("a user-namespace pod and its container took %s without a crash", took)

	for i, delay := range crashDelays(took) {
		p := pod(i + 1)
		res := e.crashDuring(delay, func(ctx context.Context, rt runtimeapi.RuntimeServiceClient) rpcResult { return whole(ctx, rt, p) })
		t.Logf("kill after %s: %.12s, %v", delay, res.id, res.err)
		ctrs, err := e.rt().ListContainers(e.ctx(), &runtimeapi.ListContainersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range ctrs.Containers {
			e.containerWorks(c.Id, c.Id == res.id)
			if got := strings.Fields(e.execOut(c.Id, "cat", "/proc/self/uid_map")); len(got) != 3 || got[1] != strconv.Itoa((21+i)<<16) {
				t.Errorf("container %.12s after restart: uid_map %v, want its pod's range", c.Id, got)
			}
		}
		if res.id != "" && len(ctrs.Containers) == 0 {
			t.Errorf("container %s was reported started but is gone after the restart", res.id)
		}
		e.removeAllAndCheck(t)
	}
}

// TestUserNamespaceImageVolume mounts image volumes (of two layers and of
// one) in a user-namespace pod, with the mappings the kubelet sends on
// every mount: the image's files are root's inside and readable.
func TestUserNamespaceImageVolume(t *testing.T) {
	e := newEnv(t)
	e.requireUserNamespaces()
	e.d.LoadImage(t, volumeImages(t))
	pod := e.usernsPod("userns-imgvol", 15<<16)
	podID := e.runPod(pod)
	cfg := e.usernsCtr(pod, "reader", "sleep", "3600")
	userns := pod.Linux.SecurityContext.NamespaceOptions.UsernsOptions
	for _, m := range []*runtimeapi.Mount{imageMount("/vol", twoLayers, ""), imageMount("/one", oneLayer, "")} {
		m.UidMappings, m.GidMappings = userns.Uids, userns.Gids
		cfg.Mounts = append(cfg.Mounts, m)
	}
	id := e.run(podID, pod, cfg)
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, testutil.Patience(10*time.Second))
	if got := e.execOut(id, "cat", "/vol/data/hello.txt", "/vol/data/layer2.txt", "/one/only/one.txt"); got != "hello from layer onelayer twosingle layer" {
		t.Errorf("image volume files = %q", got)
	}
	if got := strings.Fields(e.execOut(id, "stat", "-c", "%u:%g", "/vol/data/hello.txt", "/one/only/one.txt")); strings.Join(got, " ") != "0:0 0:0" {
		t.Errorf("owners of the image volumes' files in the pod = %v, want 0:0", got)
	}
	if out := e.exec(id, "touch", "/vol/data/new"); out.ExitCode == 0 {
		t.Errorf("an image volume is writable in the pod")
	}
	e.removeAllAndCheck(t)
}
