package integration

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
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
			steps = append(steps, step)
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(steps)
	// A step may be checked on more than one path (a layer streamed or
	// unpacked from content).
	return slices.Compact(steps)
}

// fpEnv is a daemon armed through a failpoint file, and a registry image of
// its own for the pull steps.
type fpEnv struct {
	*env
	armFile string
	pullRef string
}

func (f *fpEnv) arm(step, mode string) {
	f.t.Helper()
	if err := os.WriteFile(f.armFile, []byte(step+" "+mode+"\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fpEnv) disarm() {
	f.t.Helper()
	if err := os.Remove(f.armFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		f.t.Fatal(err)
	}
}

// injected checks what an armed operation returned: the injected error in
// error mode, a lost connection in kill mode, after which the daemon, dead
// by its own hand, is started again.
func (f *fpEnv) injected(step, mode string, err error) {
	f.t.Helper()
	f.disarm()
	switch mode {
	case "error":
		if err == nil || !strings.Contains(err.Error(), failpoint.ErrInjected.Error()) {
			f.t.Fatalf("%s armed to fail: the operation returned %v, want the injected failure (is the step reached?)", step, err)
		}
	case "kill":
		if err == nil {
			f.t.Fatalf("%s armed to kill the daemon: the operation succeeded (is the step reached?)", step)
		}
		deadline := time.Now().Add(testutil.Patience(10 * time.Second))
		for f.d.Running() && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
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
	"PullImage": func(f *fpEnv, step, mode string) string {
		f.t.Cleanup(func() {
			_, _ = f.d.Images.RemoveImage(context.Background(), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: f.pullRef}})
		})
		before := f.imageFiles()
		f.arm(step, mode)
		_, err := f.d.Images.PullImage(f.ctx(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: f.pullRef}})
		f.injected(step, mode, err)
		st, err := f.d.Images.ImageStatus(f.ctx(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: f.pullRef}})
		if err != nil {
			f.t.Fatal(err)
		}
		if mode == "error" && st.Image != nil {
			f.t.Errorf("the image is listed after its pull failed")
		}
		if st.Image == nil {
			if after := f.imageFiles(); !equalStrings(before, after) {
				f.t.Errorf("the failed pull left files in the image store:\n  before %v\n  after  %v", before, after)
			}
		}
		// The retry pulls it whole; removed, nothing of it is left.
		if _, err := f.d.Images.PullImage(f.ctx(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: f.pullRef}}); err != nil {
			f.t.Fatalf("PullImage again: %v", err)
		}
		if _, err := f.d.Images.RemoveImage(f.ctx(), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: f.pullRef}}); err != nil {
			f.t.Fatal(err)
		}
		if after := f.imageFiles(); !equalStrings(before, after) {
			f.t.Errorf("pull and removal left files in the image store:\n  before %v\n  after  %v", before, after)
		}
		return "no image listed (error); no blob, snapshot or temp file left; the retry pulls it and removal leaves nothing"
	},
}

func (f *fpEnv) listPods() []string {
	f.t.Helper()
	resp, err := f.rt().ListPodSandbox(f.ctx(), &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		f.t.Fatal(err)
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

func equalStrings(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}

// pushUniqueImage pushes an image of one random layer to the loopback
// registry under a name of this run, so that no other image shares its
// blobs and every step of its pull does work.
func pushUniqueImage(t *testing.T) string {
	t.Helper()
	noise := make([]byte, 64<<10)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layerOf(t, map[string]string{"noise": string(noise), "etc/hello": "failpoint"}))
	if err != nil {
		t.Fatal(err)
	}
	repo := fmt.Sprintf("crib-test/failpoint-%d", time.Now().UnixNano())
	ref, err := name.ParseReference(strings.TrimPrefix(testutil.LoopbackRegistry, "http://")+"/"+repo+":1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Skipf("push to the loopback registry: %v", err)
	}
	return "failpoint.test/" + repo + ":1"
}

// TestFailpoints makes each step of RunPodSandbox, CreateContainer,
// StartContainer, StopPodSandbox, RemovePodSandbox and PullImage fail, then
// kill the daemon there, and checks each time that the request fails
// clearly and nothing is left, and prints the table of what was tested.
func TestFailpoints(t *testing.T) {
	testutil.RequiresRoot(t)
	t.Parallel()
	steps := failpointSteps(t)
	if len(steps) == 0 {
		t.Fatal("no failpoint.Check in internal/")
	}
	img := testutil.Busybox(t)
	armFile := filepath.Join(t.TempDir(), "armed")
	pullRef := pushUniqueImage(t)
	d := testutil.StartDaemon(t, testutil.Options{
		Image:      &img,
		Env:        []string{failpoint.Env + "=" + armFile},
		Registries: map[string][]string{"failpoint.test": {testutil.LoopbackRegistry}},
	})
	type row struct{ step, errTested, killTested, checked string }
	var rows []row
	for _, step := range steps {
		op, _, _ := strings.Cut(step, "/")
		drive, ok := failpointDrivers[op]
		if !ok {
			t.Errorf("step %s: no test drives %s (add it to failpointDrivers)", step, op)
			rows = append(rows, row{step, "NO", "NO", "(no driver)"})
			continue
		}
		r := row{step: step, errTested: "FAILED", killTested: "FAILED"}
		modes := []string{"error", "kill"}
		if testing.Short() {
			// The VM suite (-short, emulated, about twenty seconds a step)
			// runs them on the systemd driver: kill mode only, whose
			// recovery removes what the step made through systemd, and only
			// the steps by which a cgroup exists (no pull step, no step of
			// CreateContainer before runc made the container). The host's
			// run tests every step both ways.
			if op == "PullImage" || (op == "CreateContainer" && step != "CreateContainer/created") {
				r.errTested, r.killTested, r.checked = "-short: no", "-short: no", "(the host's run)"
				rows = append(rows, r)
				continue
			}
			modes, r.errTested = []string{"kill"}, "-short: no"
		}
		for _, mode := range modes {
			ok := t.Run(step+"/"+mode, func(t *testing.T) {
				f := &fpEnv{env: &env{t: t, d: d, img: img}, armFile: armFile, pullRef: pullRef}
				defer f.disarm()
				r.checked = drive(f, step, mode)
			})
			if ok && mode == "error" {
				r.errTested = "yes"
			} else if ok {
				r.killTested = "yes"
			}
		}
		rows = append(rows, r)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| step | failure tested | kill -9 tested | what was checked |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.step, r.errTested, r.killTested, r.checked)
	}
	t.Logf("failure points (%d steps):\n%s", len(rows), b.String())
}
