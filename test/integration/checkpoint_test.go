package integration

import (
	"archive/tar"
	"bytes"
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

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// counterCmd counts in /tmp/c, ten times a second; each count replaces
// the file whole (a rename), so that a reader never sees it empty.
var counterCmd = []string{"sh", "-c", "echo up; i=0; while true; do echo $i > /tmp/c.new; mv /tmp/c.new /tmp/c; i=$((i+1)); sleep 0.1; done"}

// checkpointEnv is a daemon given config, its [checkpoint] table.
func checkpointEnv(t *testing.T, config string) *env {
	t.Helper()
	testutil.RequiresRoot(t)
	t.Parallel()
	img := testutil.Busybox(t)
	d := testutil.StartDaemon(t, testutil.Options{Image: &img, ExtraConfig: config})
	return &env{t: t, d: d, img: img}
}

// archiveFiles reads the archive at path: each regular file's content by
// name, and every name in order.
func archiveFiles(t *testing.T, path string) (map[string][]byte, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return tarFiles(t, f)
}

func tarFiles(t *testing.T, r io.Reader) (map[string][]byte, []string) {
	t.Helper()
	files := map[string][]byte{}
	var names []string
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files, names
		}
		if err != nil {
			t.Fatalf("read the archive: %v", err)
		}
		names = append(names, hdr.Name)
		if hdr.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[hdr.Name] = data
		}
	}
}

// counter reads the counter's value in the container.
func (e *env) counter(id string) int {
	e.t.Helper()
	out := e.exec(id, "cat", "/tmp/c")
	n, err := strconv.Atoi(strings.TrimSpace(string(out.Stdout)))
	if err != nil {
		e.t.Fatalf("counter: %q: %v", out.Stdout, err)
	}
	return n
}

// runChangedCounter runs a counter in a new pod of that name, and changes
// its writable layer: /written.txt written, the image's /etc/group deleted.
func (e *env) runChangedCounter(podName string) (podID, id string) {
	e.t.Helper()
	pod := e.podConfig(podName)
	podID = e.runPod(pod)
	id = e.run(podID, pod, e.ctrConfig("counter", counterCmd...))
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	e.exec(id, "sh", "-c", "echo kept > /written.txt && rm /etc/group")
	return podID, id
}

// TestCheckpointContainer checkpoints a running counter whose writable
// layer holds a written and a deleted file, and reads the archive as
// checkpointctl and a restore would: CRIU's images, config.dump,
// spec.dump, status.dump, the writable layer's tar and deleted.files, the
// log. The container keeps running and counting; nothing is left beside
// the archive or in the work dir.
func TestCheckpointContainer(t *testing.T) {
	testutil.CriuDumps(t)
	e := checkpointEnv(t, testutil.CriuConfig())
	_, id := e.runChangedCounter("ckpt")
	pid := e.containerPid(id)

	dir := t.TempDir()
	loc := filepath.Join(dir, "counter.tar")
	start := time.Now()
	if _, err := e.rt().CheckpointContainer(e.ctx(), &runtimeapi.CheckpointContainerRequest{ContainerId: id, Location: loc}); err != nil {
		t.Fatalf("CheckpointContainer: %v\n%s", err, e.d.ReadLog())
	}
	t.Logf("checkpoint of a busybox counter took %s", time.Since(start))

	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the archive's directory holds %d entries, want the archive alone: %v", len(entries), entries)
	}
	files, names := archiveFiles(t, loc)
	for _, want := range []string{"checkpoint/inventory.img", "checkpoint/pstree.img", "config.dump", "spec.dump", "status.dump", "status", "rootfs-diff.tar", "deleted.files", "dump.log", "stats-dump", "container.log"} {
		if _, ok := files[want]; !ok {
			t.Errorf("the archive has no %s; it has %v", want, names)
		}
	}
	pages := false
	for _, n := range names {
		pages = pages || strings.HasPrefix(n, "checkpoint/pages-")
	}
	if !pages {
		t.Errorf("the archive has no checkpoint/pages-*.img: %v", names)
	}

	var cfg struct {
		ID, Name       string
		RootfsImageRef string    `json:"rootfsImageRef"`
		Checkpointed   time.Time `json:"checkpointedTime"`
	}
	if err := json.Unmarshal(files["config.dump"], &cfg); err != nil {
		t.Errorf("config.dump: %v", err)
	} else if cfg.ID != id || cfg.Name != "counter" || cfg.RootfsImageRef == "" || cfg.Checkpointed.IsZero() {
		t.Errorf("config.dump = %+v, want id %s, name counter, an image ref and a checkpoint time", cfg, id)
	}
	var spec specs.Spec
	if err := json.Unmarshal(files["spec.dump"], &spec); err != nil {
		t.Errorf("spec.dump: %v", err)
	} else if got := spec.Annotations["io.kubernetes.cri.container-name"]; got != "counter" {
		t.Errorf("spec.dump's container-name annotation = %q, want counter", got)
	}
	var st runtimeapi.ContainerStatus
	if err := json.Unmarshal(files["status.dump"], &st); err != nil || st.Id != id {
		t.Errorf("status.dump: id %q, err %v; want %s", st.Id, err, id)
	}
	var deleted []string
	if err := json.Unmarshal(files["deleted.files"], &deleted); err != nil {
		t.Errorf("deleted.files: %v", err)
	} else if !slicesContain(deleted, "/etc/group") {
		t.Errorf("deleted.files = %v, want /etc/group in it", deleted)
	}
	diff, diffNames := tarFiles(t, bytes.NewReader(files["rootfs-diff.tar"]))
	if got := string(diff["written.txt"]); got != "kept\n" {
		t.Errorf("rootfs-diff.tar's written.txt = %q, want \"kept\\n\" (entries %v)", got, diffNames)
	}
	if _, ok := diff["tmp/c"]; !ok {
		t.Errorf("rootfs-diff.tar has no tmp/c: %v", diffNames)
	}
	if !strings.Contains(string(files["container.log"]), "up") {
		t.Errorf("container.log = %q, want the container's output", files["container.log"])
	}

	// Still running, the same process, still counting.
	if st := e.status(id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("container after its checkpoint: %s, want RUNNING", st.State)
	}
	if got := e.containerPid(id); got != pid || syscall.Kill(pid, 0) != nil {
		t.Errorf("container pid after its checkpoint: %d (alive: %v), want %d alive", got, syscall.Kill(pid, 0) == nil, pid)
	}
	first := e.counter(id)
	eventually(t, 10*time.Second, "the counter to go on after the checkpoint", func() bool { return e.counter(id) > first })
	noCheckpointLeftovers(t, e.d)

	checkpointctl(t, loc, "counter")

	// A stopped container has nothing to dump.
	if _, err := e.rt().StopContainer(e.ctx(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 0}); err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(dir, "again.tar")
	_, err := e.rt().CheckpointContainer(e.ctx(), &runtimeapi.CheckpointContainerRequest{ContainerId: id, Location: again})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("CheckpointContainer of a stopped container: %v, want FailedPrecondition", err)
	}
	if _, err := os.Stat(again); err == nil {
		t.Errorf("an archive was written for a stopped container")
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// noCheckpointLeftovers checks that no checkpoint work dir and no criu
// process of the daemon's is left.
func noCheckpointLeftovers(t *testing.T, d *testutil.Daemon) {
	t.Helper()
	work := filepath.Join(d.Root, "checkpoints")
	eventually(t, 30*time.Second, "no checkpoint work dir and no criu process left", func() bool {
		entries, _ := os.ReadDir(work)
		return len(entries) == 0 && len(criuProcesses(work)) == 0
	})
}

// criuProcesses lists the pids of criu and runc checkpoint processes that
// name dir, or of any criu when dir is "".
func criuProcesses(dir string) []string {
	var pids []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(data), "\x00", " ")
		if strings.Contains(cmd, dir) && (strings.Contains(cmd, "criu") || strings.Contains(cmd, "checkpoint")) {
			pids = append(pids, filepath.Base(filepath.Dir(p)))
		}
	}
	return pids
}

// checkpointctl runs `checkpointctl show` and `inspect` on the archive:
// $CRIB_CHECKPOINTCTL or checkpointctl in PATH; the check is skipped
// without one, unless CRIB_REQUIRE_CRIU is set.
func checkpointctl(t *testing.T, archive, name string) {
	t.Helper()
	bin := os.Getenv("CRIB_CHECKPOINTCTL")
	if bin == "" {
		bin, _ = exec.LookPath("checkpointctl")
	}
	if bin == "" {
		if os.Getenv(testutil.RequireCriuEnv) != "" {
			t.Errorf("no checkpointctl ($CRIB_CHECKPOINTCTL or in PATH), and %s is set", testutil.RequireCriuEnv)
			return
		}
		t.Logf("SKIP: no checkpointctl ($CRIB_CHECKPOINTCTL or in PATH): the archive is not read by it")
		return
	}
	for _, args := range [][]string{{"show", archive}, {"inspect", "--all", archive}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Errorf("checkpointctl %s: %v\n%s", strings.Join(args, " "), err, out)
			continue
		}
		if !strings.Contains(string(out), name) || !strings.Contains(string(out), "containerd") {
			t.Errorf("checkpointctl %s does not show container %s of engine containerd:\n%s", strings.Join(args, " "), name, out)
		}
		t.Logf("checkpointctl %s:\n%s", args[0], out)
	}
}

// TestCheckpointContainerTimeout asks for a checkpoint of a counter
// within a second. Either it is written in time, whole, or the call
// answers DeadlineExceeded and leaves no archive, no temporary file, no
// work dir and no runc or CRIU process; the container runs on either way.
// (Where a dump hangs, as criu#162 describes, this is the path taken.)
func TestCheckpointContainerTimeout(t *testing.T) {
	testutil.Criu(t)
	e := checkpointEnv(t, testutil.CriuConfig())
	pod := e.podConfig("ckpt-timeout")
	podID := e.runPod(pod)
	id := e.run(podID, pod, e.ctrConfig("counter", counterCmd...))
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	dir := t.TempDir()
	loc := filepath.Join(dir, "counter.tar")
	_, err := e.rt().CheckpointContainer(e.ctx(), &runtimeapi.CheckpointContainerRequest{ContainerId: id, Location: loc, Timeout: 1})
	switch status.Code(err) {
	case codes.OK:
		t.Logf("the checkpoint was written within its timeout")
		if files, names := archiveFiles(t, loc); files["config.dump"] == nil || files["checkpoint/inventory.img"] == nil {
			t.Errorf("the archive lacks config.dump or CRIU's inventory: %v", names)
		}
	case codes.DeadlineExceeded:
		t.Logf("the checkpoint timed out: %v", err)
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("a timed-out checkpoint left %v", entries)
		}
	default:
		t.Fatalf("CheckpointContainer with a 1 s timeout: %v, want success or DeadlineExceeded\n%s", err, e.d.ReadLog())
	}
	noCheckpointLeftovers(t, e.d)
	if st := e.status(id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("container after its checkpoint: %s, want RUNNING", st.State)
	}
	first := e.counter(id)
	eventually(t, 10*time.Second, "the counter to go on after the checkpoint", func() bool { return e.counter(id) > first })
}

// TestCheckpointContainerErrors checks the clear errors of a checkpoint
// that cannot be made: an unknown container, a relative location or one
// in a missing directory, and a criu that does not exist (a daemon
// configured so; no criu is needed on the host).
func TestCheckpointContainerErrors(t *testing.T) {
	e := checkpointEnv(t, "[checkpoint]\ncriu_path = \"/nonexistent/criu\"\n")
	pod := e.podConfig("ckpt-err")
	podID := e.runPod(pod)
	id := e.run(podID, pod, e.ctrConfig("c", "sleep", "3600"))
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	dir := t.TempDir()
	for _, tt := range []struct {
		name, id, loc string
		code          codes.Code
		mention       string
	}{
		{"unknown container", "0123456789abcdef", filepath.Join(dir, "a.tar"), codes.NotFound, "0123456789abcdef"},
		{"relative location", id, "a.tar", codes.InvalidArgument, "location"},
		{"missing directory", id, filepath.Join(dir, "missing", "a.tar"), codes.InvalidArgument, "location"},
		{"location is a directory", id, dir, codes.InvalidArgument, "location"},
		{"no criu", id, filepath.Join(dir, "a.tar"), codes.FailedPrecondition, "/nonexistent/criu"},
	} {
		_, err := e.rt().CheckpointContainer(e.ctx(), &runtimeapi.CheckpointContainerRequest{ContainerId: tt.id, Location: tt.loc})
		if status.Code(err) != tt.code || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("%s: %v, want %s naming %q", tt.name, err, tt.code, tt.mention)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed checkpoints left %v", entries)
	}
	// A .tar that is no checkpoint archive is no image to restore from.
	bad := filepath.Join(t.TempDir(), "bad.tar")
	if err := os.WriteFile(bad, make([]byte, 1024), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := e.ctrConfig("restored", "sleep", "1")
	cfg.Image = &runtimeapi.ImageSpec{Image: bad}
	_, err := e.rt().CreateContainer(e.ctx(), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: pod})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "config.dump") {
		t.Errorf("CreateContainer from a tar that is no checkpoint: %v, want InvalidArgument naming config.dump", err)
	}
	if st := e.status(id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("container after failed checkpoints: %s, want RUNNING", st.State)
	}
	noCheckpointLeftovers(t, e.d)
}

// TestCheckpointRestore checkpoints a counter that has counted past 30,
// then creates a container in a new pod whose image is the archive (as
// CRI-O takes one) and starts it: it is restored, not started afresh. It
// counts on from where the checkpoint left it, and its writable layer has
// the written file and lacks the deleted one.
func TestCheckpointRestore(t *testing.T) {
	testutil.CriuRestores(t)
	e := checkpointEnv(t, testutil.CriuConfig())
	_, id := e.runChangedCounter("ckpt-src")
	eventually(t, 30*time.Second, "the counter to pass 30", func() bool { return e.counter(id) > 30 })
	loc := filepath.Join(t.TempDir(), "counter.tar")
	if _, err := e.rt().CheckpointContainer(e.ctx(), &runtimeapi.CheckpointContainerRequest{ContainerId: id, Location: loc}); err != nil {
		t.Fatalf("CheckpointContainer: %v", err)
	}
	files, _ := archiveFiles(t, loc)
	diff, _ := tarFiles(t, bytes.NewReader(files["rootfs-diff.tar"]))
	at, err := strconv.Atoi(strings.TrimSpace(string(diff["tmp/c"])))
	if err != nil || at <= 30 {
		t.Fatalf("the archive's /tmp/c = %q, want a count past 30", diff["tmp/c"])
	}

	dst := e.podConfig("ckpt-dst")
	dstID := e.runPod(dst)
	cfg := e.ctrConfig("counter", counterCmd...)
	cfg.Image = &runtimeapi.ImageSpec{Image: loc}
	start := time.Now()
	restored := e.run(dstID, dst, cfg)
	t.Logf("create and restore took %s", time.Since(start))
	if st := e.status(restored); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("restored container: %s (%s: %s), want RUNNING\n%s", st.State, st.Reason, st.Message, e.d.ReadLog())
	}
	// A fresh start would count from 0; the restored shell goes on from
	// its count in memory.
	if got := e.counter(restored); got < at {
		t.Errorf("restored counter at %d, below the checkpoint's %d: started afresh, not restored", got, at)
	}
	eventually(t, 10*time.Second, "the restored counter to count on", func() bool { return e.counter(restored) > at+5 })
	if got := e.status(restored).Annotations; got["restored"] != "true" || got["checkpointImage"] != loc || got["checkpointedAt"] == "" {
		t.Errorf("restored container's annotations = %v, want restored, checkpointImage and checkpointedAt", got)
	}
	if out := e.exec(restored, "cat", "/written.txt"); string(out.Stdout) != "kept\n" {
		t.Errorf("restored /written.txt = %q, want \"kept\\n\"", out.Stdout)
	}
	if out := e.exec(restored, "ls", "/etc/group"); out.ExitCode == 0 {
		t.Errorf("restored /etc/group exists; the checkpointed container had deleted it")
	}
	e.wantCgroupIn(restored, dstID)

	// Not yet into a pod of its own user namespace: said so, nothing made.
	// A subtest, so that a runtime without user namespaces skips this
	// alone.
	t.Run("into a user-namespaced pod", func(t *testing.T) {
		e := &env{t: t, d: e.d, img: e.img}
		e.requireUserNamespaces()
		upod := e.usernsPod("ckpt-userns", 31<<16)
		upodID := e.runPod(upod)
		ucfg := e.usernsCtr(upod, "counter", counterCmd...)
		ucfg.Image = &runtimeapi.ImageSpec{Image: loc}
		e.wantRestoreRefused(upodID, upod, ucfg, codes.Unimplemented, "user namespace")
	})
}

// wantCgroupIn checks that container id's process is in the cgroup crib
// made for it in pod podID, not in the checkpointed container's: a restore
// puts the process in the new pod's cgroup, a systemd scope under the
// systemd driver. Its path (the unified hierarchy's on cgroup v2, the
// memory controller's on v1) names both the container and the pod.
func (e *env) wantCgroupIn(id, podID string) {
	e.t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", e.containerPid(id)))
	if err != nil {
		e.t.Fatal(err)
	}
	var path string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if (testutil.Unified() && parts[0] == "0") || (!testutil.Unified() && slicesContain(strings.Split(parts[1], ","), "memory")) {
			path = parts[2]
		}
	}
	if !strings.Contains(path, id) || !strings.Contains(path, podID[:12]) {
		e.t.Errorf("restored container %s is in cgroup %q, want its own in pod %s's\n%s", id, path, podID, data)
	}
}

// TestRestoreRefusedOnOldRunc runs where crib refuses restores by design:
// runc before 1.2 on a cgroup v2 host, which would put the restored
// processes back in the checkpointed container's cgroup. The checkpoint
// works; CreateContainer from its archive answers FailedPrecondition naming
// the runtime and the version that restores, and leaves no container.
// Elsewhere the restore tests run instead.
func TestRestoreRefusedOnOldRunc(t *testing.T) {
	testutil.CriuDumps(t)
	if testutil.RuntimeRestoreMissing() == "" {
		t.Skip("the default runtime restores on this host (TestCheckpointRestore)")
	}
	e := checkpointEnv(t, testutil.CriuConfig())
	_, id := e.runChangedCounter("ckpt-old-src")
	loc := filepath.Join(t.TempDir(), "counter.tar")
	if _, err := e.rt().CheckpointContainer(e.ctx(), &runtimeapi.CheckpointContainerRequest{ContainerId: id, Location: loc}); err != nil {
		t.Fatalf("CheckpointContainer: %v", err)
	}
	dst := e.podConfig("ckpt-old-dst")
	dstID := e.runPod(dst)
	cfg := e.ctrConfig("counter", counterCmd...)
	cfg.Image = &runtimeapi.ImageSpec{Image: loc}
	e.wantRestoreRefused(dstID, dst, cfg, codes.FailedPrecondition, "runc 1.2 or later")
	if st := e.status(id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("the checkpointed container: %s, want RUNNING", st.State)
	}
	noCheckpointLeftovers(t, e.d)
}

// wantRestoreRefused creates cfg, whose image is a checkpoint archive, in
// pod podID and expects the restore refused with code, its message naming
// why, and nothing made: no container listed in the pod.
func (e *env) wantRestoreRefused(podID string, pod *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig, code codes.Code, why string) {
	e.t.Helper()
	_, err := e.rt().CreateContainer(e.ctx(), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: pod})
	if status.Code(err) != code || !strings.Contains(err.Error(), why) {
		e.t.Errorf("restore from %s: %v, want %s naming %q", cfg.GetImage().GetImage(), err, code, why)
	}
	resp, err := e.rt().ListContainers(e.ctx(), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: podID}})
	if err != nil || len(resp.Containers) != 0 {
		e.t.Errorf("containers in the pod after the refused restore: %v (%v)", resp.GetContainers(), err)
	}
}
