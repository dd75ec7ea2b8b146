package integration

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/failpoint"
	"github.com/crib-dev/crib/internal/testutil"
)

// failpointSteps lists every step that crib's code can be made to fail at:
// the string literal of each failpoint.Check call under internal/. A step
// added there is tested here without anyone listing it.
func failpointSteps(t *testing.T) []string {
	t.Helper()
	var steps []string
	fset := token.NewFileSet()
	at := map[string]token.Position{}
	err := filepath.WalkDir("../../internal", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Check" {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "failpoint" {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok {
				t.Errorf("%s: failpoint.Check's step is not a string literal", fset.Position(call.Pos()))
				return true
			}
			step, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Errorf("%s: %v", fset.Position(call.Pos()), err)
			}
			// A step reached on one path of two would pass for both.
			if first, ok := at[step]; ok {
				t.Errorf("step %s is checked at %s and at %s: give each call site its own name", step, first, fset.Position(call.Pos()))
				return true
			}
			at[step] = fset.Position(call.Pos())
			steps = append(steps, step)
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(steps)
	return steps
}

// fpEnv is a daemon armed through a failpoint file, and a registry image of
// its own for the pull steps.
type fpEnv struct {
	*env
	armFile string
	reg     *gatedRegistry
	// reached is set once the armed step is known to have fired.
	reached bool
}

func (f *fpEnv) arm(step, mode string) {
	f.t.Helper()
	if err := os.WriteFile(f.armFile, []byte(step+" "+mode+"\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fpEnv) disarm() {
	f.t.Helper()
	for _, p := range []string{f.armFile, failpoint.Fired(f.armFile)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			f.t.Fatal(err)
		}
	}
}

// fired reports whether the daemon recorded that step fired.
func (f *fpEnv) fired(step string) bool {
	f.t.Helper()
	data, err := os.ReadFile(failpoint.Fired(f.armFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		f.t.Fatal(err)
	}
	return slices.Contains(strings.Split(string(data), "\n"), step)
}

// injected checks that the armed step fired and what the operation
// returned: the injected failure of that step in error mode, a lost
// connection in kill mode, after which the daemon, dead by its own hand,
// is started again.
func (f *fpEnv) injected(step, mode string, err error) {
	f.t.Helper()
	if mode == "kill" {
		deadline := time.Now().Add(testutil.Patience(10 * time.Second))
		for err != nil && f.d.Running() && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	f.reached = f.fired(step)
	f.disarm()
	if !f.reached {
		if !f.d.Running() {
			f.d.Restart(f.t) // dead of something else: the next steps need it
		}
		f.t.Fatalf("%s armed to %s: the step was not reached (the operation returned %v)", step, mode, err)
	}
	switch mode {
	case "error":
		if err == nil || !strings.Contains(err.Error(), step+": "+failpoint.ErrInjected.Error()) {
			f.t.Fatalf("%s armed to fail: the operation returned %v, want the step's injected failure", step, err)
		}
	case "kill":
		if err == nil {
			f.t.Fatalf("%s armed to kill the daemon: the operation succeeded", step)
		}
		if f.d.Running() {
			f.t.Fatalf("%s armed to kill the daemon: it still runs (the operation returned %v)", step, err)
		}
		f.d.Restart(f.t)
	}
}

// failpointDrivers run one operation with step armed and check what is left;
// each returns what it checked, for the table.
var failpointDrivers = map[string]func(f *fpEnv, step, mode string) string{
	"RunPodSandbox": func(f *fpEnv, step, mode string) string {
		pod := f.podConfig("fp")
		pod.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_POD // a pause too
		f.arm(step, mode)
		_, err := f.rt().RunPodSandbox(f.ctx(), &runtimeapi.RunPodSandboxRequest{Config: pod})
		f.injected(step, mode, err)
		pods := f.listPods()
		if mode == "error" && len(pods) != 0 {
			f.t.Errorf("%d pods listed after RunPodSandbox failed", len(pods))
		}
		f.noLeaksBesides(pods)
		for _, id := range pods {
			f.podWorks(id, pod)
		}
		if len(pods) == 0 {
			f.podWorks(f.runPod(pod), pod) // the kubelet's retry
		}
		f.removeAllAndCheck(f.t)
		return "no pod listed (error) or a working one (kill); no mount, netns, veth, IP, cgroup, pause, file, record; the retry works"
	},
	"CreateContainer": func(f *fpEnv, step, mode string) string {
		pod := f.podConfig("fp")
		podID := f.runPod(pod)
		cfg := f.ctrConfig("c", "sh", "-c", "echo up; sleep 3600")
		f.arm(step, mode)
		_, err := f.rt().CreateContainer(f.ctx(), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: pod})
		f.injected(step, mode, err)
		ctrs := f.listContainers()
		if mode == "error" && len(ctrs) != 0 {
			f.t.Errorf("%d containers listed after CreateContainer failed", len(ctrs))
		}
		for _, id := range ctrs {
			f.containerWorks(id, false)
		}
		if len(ctrs) == 0 {
			f.containerWorks(f.create(podID, pod, cfg), false)
		}
		f.removeAllAndCheck(f.t)
		return "no container listed (error) or a startable one (kill); no rootfs mount, bundle, record; the retry works"
	},
	"StartContainer": func(f *fpEnv, step, mode string) string {
		pod := f.podConfig("fp")
		podID := f.runPod(pod)
		id := f.create(podID, pod, f.ctrConfig("c", "sh", "-c", "echo up; sleep 3600"))
		f.arm(step, mode)
		_, err := f.rt().StartContainer(f.ctx(), &runtimeapi.StartContainerRequest{ContainerId: id})
		f.injected(step, mode, err)
		st := f.status(id)
		if mode == "error" && st.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			f.t.Errorf("container after a failed start: %s, want EXITED", st.State)
		}
		if mode == "kill" {
			// Adopted as started, with the pid Start would have recorded.
			if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
				f.t.Errorf("container after the daemon died inside its start: %s, want RUNNING", st.State)
			} else if pid := f.containerPid(id); syscall.Kill(pid, 0) != nil {
				f.t.Errorf("the adopted container's pid %d is not a live process", pid)
			}
		}
		f.removeAllAndCheck(f.t)
		return "the container EXITED (error) or adopted RUNNING with its live pid (kill); no runc container, monitor or process left after removal"
	},
	"StopPodSandbox": func(f *fpEnv, step, mode string) string {
		pod := f.podConfig("fp")
		pod.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_POD
		podID := f.runPod(pod)
		f.run(podID, pod, f.ctrConfig("c", "sleep", "3600"))
		f.arm(step, mode)
		_, err := f.rt().StopPodSandbox(f.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID})
		f.injected(step, mode, err)
		if _, err := f.rt().StopPodSandbox(f.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID}); err != nil {
			f.t.Errorf("StopPodSandbox again: %v", err)
		}
		f.removeAllAndCheck(f.t)
		return "StopPodSandbox again succeeds; after removal no mount, veth, IP, NAT rule, cgroup, process"
	},
	"RemovePodSandbox": func(f *fpEnv, step, mode string) string {
		pod := f.podConfig("fp")
		podID := f.runPod(pod)
		f.run(podID, pod, f.ctrConfig("c", "sleep", "3600"))
		f.arm(step, mode)
		_, err := f.rt().RemovePodSandbox(f.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podID})
		f.injected(step, mode, err)
		if _, err := f.rt().RemovePodSandbox(f.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podID}); err != nil {
			f.t.Errorf("RemovePodSandbox again: %v", err)
		}
		if pods := f.listPods(); len(pods) != 0 {
			f.t.Errorf("pods listed after RemovePodSandbox: %v", pods)
		}
		f.removeAllAndCheck(f.t)
		return "RemovePodSandbox again succeeds and the pod is gone; nothing left"
	},
	"StopContainer": func(f *fpEnv, step, mode string) string {
		pod := f.podConfig("fp")
		podID := f.runPod(pod)
		// sleep as its PID namespace's init ignores SIGTERM: the stop
		// sends it, waits out the timeout, then sends SIGKILL.
		id := f.run(podID, pod, f.ctrConfig("c", "sleep", "3600"))
		f.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
		stop := &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 1}
		f.arm(step, mode)
		_, err := f.rt().StopContainer(f.ctx(), stop)
		f.injected(step, mode, err)
		if _, err := f.rt().StopContainer(f.ctx(), stop); err != nil {
			f.t.Errorf("StopContainer again: %v", err)
		}
		if st := f.status(id); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 137 {
			f.t.Errorf("container after StopContainer again: %s, exit code %d; want EXITED, 137", st.State, st.ExitCode)
		}
		f.removeAllAndCheck(f.t)
		return "StopContainer again succeeds, the container EXITED by SIGKILL; nothing left after removal"
	},
	"RemoveContainer": func(f *fpEnv, step, mode string) string {
		pod := f.podConfig("fp")
		podID := f.runPod(pod)
		id := f.run(podID, pod, f.ctrConfig("c", "sleep", "3600"))
		f.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
		f.arm(step, mode)
		_, err := f.rt().RemoveContainer(f.ctx(), &runtimeapi.RemoveContainerRequest{ContainerId: id})
		f.injected(step, mode, err)
		// Stopped first, the container is listed EXITED until its record
		// goes, the last step.
		ctrs := f.listContainers()
		if step == "RemoveContainer/record" {
			if len(ctrs) != 0 {
				f.t.Errorf("containers listed after their record was removed: %v", ctrs)
			}
		} else if len(ctrs) != 1 || ctrs[0] != id {
			f.t.Errorf("containers listed after a removal cut short: %v, want [%s]", ctrs, id)
		} else if st := f.status(id); st.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			f.t.Errorf("container after a removal cut short: %s, want EXITED", st.State)
		}
		if _, err := f.rt().RemoveContainer(f.ctx(), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
			f.t.Errorf("RemoveContainer again: %v", err)
		}
		if ctrs := f.listContainers(); len(ctrs) != 0 {
			f.t.Errorf("containers listed after RemoveContainer again: %v", ctrs)
		}
		f.removeAllAndCheck(f.t)
		return "the container listed EXITED until its record goes, then not; RemoveContainer again succeeds; no mount, runc container, bundle, cgroup left"
	},
	"UpdateContainerResources": func(f *fpEnv, step, mode string) string {
		pod := f.podConfig("fp")
		podID := f.runPod(pod)
		id := f.run(podID, pod, f.limitedConfig("c", 64*mib, 50000, "sleep", "3600"))
		f.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
		update := &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: &runtimeapi.LinuxContainerResources{
			MemoryLimitInBytes: 96 * mib, CpuPeriod: 100000, CpuQuota: 120000, CpuShares: 1024,
		}}
		f.arm(step, mode)
		_, err := f.rt().UpdateContainerResources(f.ctx(), update)
		f.injected(step, mode, err)
		recorded := f.status(id).GetResources().GetLinux().GetMemoryLimitInBytes()
		switch {
		case step == "UpdateContainerResources/record":
			// Recorded and in force: done, though it answered a failure.
			f.wantLimits(id, 96*mib, 120000, 1024)
			if recorded != 96*mib {
				f.t.Errorf("status memory limit after the update was recorded: %d, want %d", recorded, 96*mib)
			}
		case mode == "error":
			// Undone: the old values back in the cgroup and in status.
			f.wantLimits(id, 64*mib, 50000, 512)
			if recorded != 64*mib {
				f.t.Errorf("status memory limit after a failed update: %d, want the old %d", recorded, 64*mib)
			}
		default:
			// In force, not recorded: status shows the old values, which
			// the kubelet, comparing with what it asked, asks again.
			if recorded != 64*mib {
				f.t.Errorf("status memory limit after a restart before the record: %d, want the old %d", recorded, 64*mib)
			}
		}
		if _, err := f.rt().UpdateContainerResources(f.ctx(), update); err != nil {
			f.t.Fatalf("UpdateContainerResources again: %v", err)
		}
		f.wantLimits(id, 96*mib, 120000, 1024)
		if got := f.status(id).GetResources().GetLinux().GetMemoryLimitInBytes(); got != 96*mib {
			f.t.Errorf("status memory limit after UpdateContainerResources again: %d, want %d", got, 96*mib)
		}
		f.removeAllAndCheck(f.t)
		return "error: the old limits back in the cgroup and status (done at /record); kill: status old until the retry; the retry puts the new in both"
	},
	"UpdatePodSandboxResources": func(f *fpEnv, step, mode string) string {
		pod := f.podConfig("fp")
		podID := f.runPod(pod)
		id := f.run(podID, pod, f.ctrConfig("c", "sleep", "3600"))
		f.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
		podCgroup := f.podCgroup(id)
		resize := func(memory, quota int64) error { return f.resizePod(podID, memory, quota) }
		// Resized once, so that a failed resize has limits of crib's to
		// put back.
		if err := resize(48*mib, 40000); err != nil {
			f.t.Fatalf("UpdatePodSandboxResources: %v", err)
		}
		f.arm(step, mode)
		err := resize(64*mib, 50000)
		f.injected(step, mode, err)
		if step == "UpdatePodSandboxResources/cgroup" && mode == "error" {
			podCgroup.want(f.t, strconv.Itoa(48*mib), "40000")
		} else {
			podCgroup.want(f.t, strconv.Itoa(64*mib), "50000")
		}
		if err := resize(64*mib, 50000); err != nil {
			f.t.Fatalf("UpdatePodSandboxResources again: %v", err)
		}
		podCgroup.want(f.t, strconv.Itoa(64*mib), "50000")
		f.removeAllAndCheck(f.t)
		return "error at /cgroup: the pod cgroup's previous limits back; otherwise the new in force; the retry puts the new; nothing left"
	},
	"CheckpointContainer": func(f *fpEnv, step, mode string) string {
		pod := f.podConfig("fp")
		podID := f.runPod(pod)
		id := f.run(podID, pod, f.ctrConfig("c", counterCmd...))
		f.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
		pid := f.containerPid(id)
		dir := f.t.TempDir()
		req := &runtimeapi.CheckpointContainerRequest{ContainerId: id, Location: filepath.Join(dir, "c.tar")}
		f.arm(step, mode)
		_, err := f.rt().CheckpointContainer(f.ctx(), req)
		f.injected(step, mode, err)
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			f.t.Errorf("a failed checkpoint left %v beside its location", entries)
		}
		noCheckpointLeftovers(f.t, f.d)
		if st := f.status(id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			f.t.Errorf("container after a failed checkpoint: %s, want RUNNING", st.State)
		} else if got := f.containerPid(id); got != pid || syscall.Kill(pid, 0) != nil {
			f.t.Errorf("container pid after a failed checkpoint: %d, want %d alive", got, pid)
		}
		checked := "the container RUNNING with its pid; no archive or temp file beside the location, no work dir, no runc/CRIU process"
		if p, _ := testutil.FindDumpingCriu(); p != "" {
			if _, err := f.rt().CheckpointContainer(f.ctx(), req); err != nil {
				f.t.Errorf("CheckpointContainer again: %v", err)
			} else if _, err := os.Stat(req.Location); err != nil {
				f.t.Errorf("CheckpointContainer again wrote no archive: %v", err)
			}
			checked += "; the retry writes the archive"
		}
		f.removeAllAndCheck(f.t)
		return checked
	},
	// A restore is a CreateContainer whose image is a checkpoint archive.
	"RestoreContainer": func(f *fpEnv, step, mode string) string {
		src := f.podConfig("fp-src")
		srcID := f.runPod(src)
		id := f.run(srcID, src, f.ctrConfig("c", counterCmd...))
		f.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
		archive := filepath.Join(f.t.TempDir(), "c.tar")
		if _, err := f.rt().CheckpointContainer(f.ctx(), &runtimeapi.CheckpointContainerRequest{ContainerId: id, Location: archive}); err != nil {
			f.t.Fatalf("CheckpointContainer: %v", err)
		}
		dst := f.podConfig("fp-dst")
		dstID := f.runPod(dst)
		cfg := f.ctrConfig("c", counterCmd...)
		cfg.Image = &runtimeapi.ImageSpec{Image: archive}
		f.arm(step, mode)
		_, err := f.rt().CreateContainer(f.ctx(), &runtimeapi.CreateContainerRequest{PodSandboxId: dstID, Config: cfg, SandboxConfig: dst})
		f.injected(step, mode, err)
		resp, err := f.rt().ListContainers(f.ctx(), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: dstID}})
		if err != nil {
			f.t.Fatal(err)
		}
		if len(resp.Containers) != 0 {
			f.t.Errorf("%d containers listed in the pod after a restore failed at its creation", len(resp.Containers))
		}
		// The retry restores it.
		restored := f.run(dstID, dst, cfg)
		f.waitState(restored, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
		if out := f.exec(restored, "cat", "/tmp/c"); out.ExitCode != 0 {
			f.t.Errorf("the restored counter's /tmp/c: exit %d", out.ExitCode)
		}
		f.removeAllAndCheck(f.t)
		return "no container listed in the pod (the creation undone, or rolled back at restart); the retry restores a running container; nothing left"
	},
	"CheckpointPod": func(f *fpEnv, step, mode string) string {
		_, podID, ids := f.runTwoCounters("fp")
		out := f.t.TempDir()
		req := &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: out, ContainerIds: []string{ids["a"], ids["b"]}}
		f.arm(step, mode)
		_, err := f.rt().CheckpointPod(f.ctx(), req)
		f.injected(step, mode, err)
		noCheckpointLeftovers(f.t, f.d)
		if entries, _ := os.ReadDir(out); len(entries) != 0 {
			f.t.Errorf("a failed pod checkpoint left %v in its directory", entries)
		}
		for name, id := range ids {
			if st := f.status(id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
				f.t.Errorf("container %s after a failed pod checkpoint: %s, want RUNNING", name, st.State)
				continue
			}
			first := f.counter(id)
			eventually(f.t, 10*time.Second, "counter "+name+" to count on (thawed)", func() bool { return f.counter(id) > first })
		}
		if _, err := f.rt().CheckpointPod(f.ctx(), req); err != nil {
			f.t.Errorf("CheckpointPod again: %v", err)
		} else if _, err := os.Stat(filepath.Join(out, "checkpoint", "pod.json")); err != nil {
			f.t.Errorf("CheckpointPod again wrote no pod.json: %v", err)
		}
		f.removeAllAndCheck(f.t)
		return "the output dir empty, no work dir, no runc/CRIU process; both containers RUNNING and counting (thawed); the retry writes the checkpoint; nothing left"
	},
	"RestorePod": func(f *fpEnv, step, mode string) string {
		_, podID, ids := f.runTwoCounters("fp-src")
		out := f.t.TempDir()
		if _, err := f.rt().CheckpointPod(f.ctx(), &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: out, ContainerIds: []string{ids["a"], ids["b"]}}); err != nil {
			f.t.Fatalf("CheckpointPod: %v", err)
		}
		dst := f.podConfig("fp-dst")
		req := &runtimeapi.RestorePodRequest{CheckpointPath: out, Config: dst, ContainerConfigs: []*runtimeapi.ContainerConfig{
			f.ctrConfig("a", counterCmd...), f.ctrConfig("b", counterCmd...),
		}}
		f.arm(step, mode)
		_, err := f.rt().RestorePod(f.ctx(), req)
		f.injected(step, mode, err)
		if pods := f.listPods(); len(pods) != 1 || pods[0] != podID {
			f.t.Errorf("pods after a failed restore: %v, want the source %s alone", pods, podID)
		}
		noCheckpointLeftovers(f.t, f.d)
		resp, err := f.rt().RestorePod(f.ctx(), req)
		if err != nil {
			f.t.Fatalf("RestorePod again: %v", err)
		}
		for _, rc := range resp.RestoredContainers {
			f.start(rc.ContainerId)
			f.waitState(rc.ContainerId, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
		}
		f.removeAllAndCheck(f.t)
		return "no restored pod listed (removed, or at restart), no work dir; the retry restores both containers; nothing left"
	},
	"RemoveImage": func(f *fpEnv, step, mode string) string {
		before := f.imageFiles()
		ref := &runtimeapi.ImageSpec{Image: f.reg.ref}
		if _, err := f.d.Images.PullImage(f.ctx(), &runtimeapi.PullImageRequest{Image: ref}); err != nil {
			f.t.Fatalf("PullImage: %v", err)
		}
		f.arm(step, mode)
		_, err := f.d.Images.RemoveImage(f.ctx(), &runtimeapi.RemoveImageRequest{Image: ref})
		f.injected(step, mode, err)
		st, err := f.d.Images.ImageStatus(f.ctx(), &runtimeapi.ImageStatusRequest{Image: ref})
		if err != nil {
			f.t.Fatal(err)
		}
		if st.Image != nil {
			f.t.Errorf("the image is listed after its record was removed")
		}
		if _, err := f.d.Images.RemoveImage(f.ctx(), &runtimeapi.RemoveImageRequest{Image: ref}); err != nil {
			f.t.Errorf("RemoveImage again: %v", err)
		}
		f.sameImageFiles(before, "the removal and its retry")
		return "the image not listed; RemoveImage again (error) or the restart (kill) deletes its blobs and snapshots"
	},
	"PullImage": func(f *fpEnv, step, mode string) string {
		f.t.Cleanup(func() {
			_, _ = f.d.Images.RemoveImage(context.Background(), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: f.reg.ref}})
		})
		before := f.imageFiles()
		f.arm(step, mode)
		_, err := f.d.Images.PullImage(f.ctx(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: f.reg.ref}})
		f.injected(step, mode, err)
		st, err := f.d.Images.ImageStatus(f.ctx(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: f.reg.ref}})
		if err != nil {
			f.t.Fatal(err)
		}
		if mode == "error" && st.Image != nil {
			f.t.Errorf("the image is listed after its pull failed")
		}
		if st.Image == nil {
			f.sameImageFiles(before, "the failed pull")
		}
		// The retry pulls it whole; removed, nothing of it is left.
		if _, err := f.d.Images.PullImage(f.ctx(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: f.reg.ref}}); err != nil {
			f.t.Fatalf("PullImage again: %v", err)
		}
		if _, err := f.d.Images.RemoveImage(f.ctx(), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: f.reg.ref}}); err != nil {
			f.t.Fatal(err)
		}
		f.sameImageFiles(before, "pull and removal")
		return "no image listed (error); no blob, snapshot or temp file left; the retry pulls it and removal leaves nothing"
	},
}

func (e *env) listPods() []string {
	e.t.Helper()
	resp, err := e.rt().ListPodSandbox(e.ctx(), &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		e.t.Fatal(err)
	}
	var ids []string
	for _, p := range resp.Items {
		ids = append(ids, p.Id)
	}
	return ids
}

func (f *fpEnv) listContainers() []string {
	f.t.Helper()
	resp, err := f.rt().ListContainers(f.ctx(), &runtimeapi.ListContainersRequest{})
	if err != nil {
		f.t.Fatal(err)
	}
	var ids []string
	for _, c := range resp.Containers {
		ids = append(ids, c.Id)
	}
	return ids
}

// noLeaksBesides checks, when no pod is listed, that nothing of the failed
// creation is on the machine.
func (f *fpEnv) noLeaksBesides(pods []string) {
	f.t.Helper()
	if len(pods) > 0 {
		return
	}
	if leaks := f.crashLeaks(); len(leaks) > 0 {
		f.t.Errorf("left on the machine:\n  %s", strings.Join(leaks, "\n  "))
		f.cleanNATRules()
	}
}

// imageFiles lists the files of the image store, metadata aside.
func (f *fpEnv) imageFiles() []string {
	f.t.Helper()
	var out []string
	for _, sub := range []string{"content", "snapshots", "images"} {
		root := filepath.Join(f.d.Root, sub)
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(f.d.Root, path)
				out = append(out, rel)
			}
			return nil
		})
	}
	sort.Strings(out)
	return out
}

// sameImageFiles checks that the image store holds the files it held
// before what did, and names those that differ.
func (f *fpEnv) sameImageFiles(before []string, what string) {
	f.t.Helper()
	after := f.imageFiles()
	var added, gone []string
	for _, p := range after {
		if _, ok := slices.BinarySearch(before, p); !ok {
			added = append(added, p)
		}
	}
	for _, p := range before {
		if _, ok := slices.BinarySearch(after, p); !ok {
			gone = append(gone, p)
		}
	}
	if len(added)+len(gone) > 0 {
		f.t.Errorf("%s changed the image store's files:\n  added %v\n  removed %v", what, added, gone)
	}
}

// gatedRegistry serves the image of the pull steps, of two layers of
// random bytes (no other image shares them, so every step of its pull does
// work), from a registry of the test's own. It holds the download of the
// first layer until the second's has begun: a pull streams its first
// layer, so the second is certain to be fetched in the background and then
// unpacked from content, the steps a pull of one layer never reaches.
type gatedRegistry struct {
	host          string // the registry's host:port
	ref           string // the image, as the daemon pulls it
	first, second string // the layers' blob digests
	mu            sync.Mutex
	secondAsked   chan struct{}
	asked         bool
}

func newGatedRegistry(t *testing.T) *gatedRegistry {
	t.Helper()
	// The first layer big enough that streaming it is real work.
	first, second := randomFileLayer(t, "fp/first", 1<<20), randomFileLayer(t, "fp/second", 64<<10)
	img, err := mutate.AppendLayers(empty.Image, first, second)
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedRegistry{secondAsked: make(chan struct{})}
	for _, l := range []struct {
		v1.Layer
		to *string
	}{{first, &g.first}, {second, &g.second}} {
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		*l.to = d.String()
	}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && !g.gate(r) {
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	g.host = strings.TrimPrefix(srv.URL, "http://")
	ref, err := name.ParseReference(g.host+"/crib-test/failpoint:1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("push the pull steps' image to the test's registry: %v", err)
	}
	g.ref = "failpoint.test/crib-test/failpoint:1"
	return g
}

// gate holds a GET of the first layer's blob until the second's was asked
// for; it reports whether the request is to be served (its client may
// have gone meanwhile).
func (g *gatedRegistry) gate(r *http.Request) bool {
	switch path.Base(r.URL.Path) {
	case g.second:
		g.mu.Lock()
		if !g.asked {
			g.asked = true
			close(g.secondAsked)
		}
		g.mu.Unlock()
	case g.first:
		g.mu.Lock()
		asked := g.secondAsked
		g.mu.Unlock()
		select {
		case <-asked:
		case <-r.Context().Done():
			return false
		}
		// The next pull waits for its own download of the second.
		g.mu.Lock()
		g.secondAsked, g.asked = make(chan struct{}), false
		g.mu.Unlock()
	}
	return true
}

// shortSkips says which steps the -short run leaves to the host's run. The
// VM suite (-short, emulated, about twenty seconds a step) runs the
// failure points on the systemd driver, in kill mode only, whose recovery
// removes what the step made through systemd, and only the steps by which
// a cgroup exists: no step of an image, none of CreateContainer before
// runc made the container, and none of a checkpoint or restore (CRIU's
// steps cost about a minute each there, and the cgroups they leave are
// those of the steps above).
func shortSkips(op, step string) bool {
	switch op {
	case "PullImage", "RemoveImage", "CheckpointContainer", "RestoreContainer", "CheckpointPod", "RestorePod":
		return true
	}
	return op == "CreateContainer" && step != "CreateContainer/created"
}

// failpointNeeds says why step cannot run on this host ("" when it can):
// a checkpoint needs a criu that passes its check, and past its first
// step one that can dump.
func failpointNeeds(op, step string) string {
	if op != "CheckpointContainer" && op != "RestoreContainer" && op != "CheckpointPod" && op != "RestorePod" {
		return ""
	}
	find := testutil.FindDumpingCriu
	if step == "CheckpointContainer/intent" {
		find = testutil.FindCriu
	}
	_, why := find()
	return why
}

// TestFailpoints makes each step of every operation that has failure
// points fail, then kills the daemon there, and checks each time that the
// step was reached, that the request fails clearly and that what is left
// is consistent (undone, or recovered at restart) with nothing leaked. It
// logs a table line per step and mode, and the whole table at the end.
func TestFailpoints(t *testing.T) {
	testutil.RequiresRoot(t)
	t.Parallel()
	steps := failpointSteps(t)
	if len(steps) == 0 {
		t.Fatal("no failpoint.Check in internal/")
	}
	ops := map[string]bool{}
	for _, step := range steps {
		op, _, _ := strings.Cut(step, "/")
		ops[op] = true
	}
	for op := range failpointDrivers {
		if !ops[op] {
			t.Errorf("failpointDrivers drives %s, which has no failure point in internal/", op)
		}
	}
	img := testutil.Busybox(t)
	armFile := filepath.Join(t.TempDir(), "armed")
	reg := newGatedRegistry(t)
	d := testutil.StartDaemon(t, testutil.Options{
		Image:       &img,
		Env:         []string{failpoint.Env + "=" + armFile},
		Registries:  map[string][]string{"failpoint.test": {"http://" + reg.host}},
		ExtraConfig: testutil.CriuConfig(),
	})
	type row struct{ step, mode, reached, result, checked string }
	var rows []row
	for _, step := range steps {
		op, _, _ := strings.Cut(step, "/")
		drive, ok := failpointDrivers[op]
		for _, mode := range []string{"error", "kill"} {
			r := row{step: step, mode: mode, reached: "no", result: "FAIL"}
			switch {
			case !ok:
				t.Errorf("step %s: no test drives %s (add it to failpointDrivers)", step, op)
				r.checked = "(no driver)"
			case testing.Short() && (mode == "error" || shortSkips(op, step)):
				r.reached, r.result, r.checked = "-short: not run", "-", "(the host's run)"
			case (strings.HasPrefix(op, "Checkpoint") || strings.HasPrefix(op, "Restore")) && testutil.RuntimeCheckpointMissing() != "":
				// crib refuses checkpoints on this handler by design.
				r.reached, r.result, r.checked = "runtime cannot checkpoint: not run", "-", testutil.RuntimeCheckpointMissing()
			case strings.HasPrefix(op, "Restore") && testutil.RuntimeRestoreMissing() != "":
				// crib refuses restores on this runtime and host by design
				// (TestRestoreRefusedOnOldRunc).
				r.reached, r.result, r.checked = "runtime cannot restore here: not run", "-", testutil.RuntimeRestoreMissing()
			case failpointNeeds(op, step) != "":
				why := failpointNeeds(op, step)
				if os.Getenv(testutil.RequireCriuEnv) != "" {
					t.Errorf("step %s: %s, and %s is set", step, why, testutil.RequireCriuEnv)
				}
				r.reached, r.result, r.checked = "no criu: not run", "-", why
			default:
				var ran, reached bool
				passed := t.Run(step+"/"+mode, func(t *testing.T) {
					ran = true
					f := &fpEnv{env: &env{t: t, d: d, img: img}, armFile: armFile, reg: reg}
					defer func() { reached = f.reached }()
					defer f.disarm()
					r.checked = drive(f, step, mode)
				})
				switch {
				case !ran:
					// Left out by the one who ran the test, with -run.
					r.reached, r.result, r.checked = "-run: not run", "-", ""
				case !reached:
					// The subtest failed already; the table says so too.
					t.Errorf("step %s, %s mode: not reached", step, mode)
				default:
					r.reached = "yes"
				}
				if ran && passed {
					r.result = "PASS"
				}
			}
			t.Logf("| %s | %s | %s | %s |", r.step, r.mode, r.reached, r.result)
			rows = append(rows, r)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| step | mode | reached | result | what was checked |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.step, r.mode, r.reached, r.result, r.checked)
	}
	t.Logf("failure points (%d steps, %d runs):\n%s", len(steps), len(rows), b.String())
}
