package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// A CDI spec written after the daemon started, in the directory it is
// configured with, injects a device node (/dev/null as /dev/fake0), an env
// var, a read-only mount and a hook into the container that asks for its
// device; an unknown device fails CreateContainer with InvalidArgument
// naming it and leaves no container behind.
func TestCDIDevices(t *testing.T) {
	testutil.RequiresRoot(t)
	t.Parallel()
	img := testutil.Busybox(t)
	specDir, shared := t.TempDir(), t.TempDir()
	d := testutil.StartDaemon(t, testutil.Options{
		Image:       &img,
		ExtraConfig: fmt.Sprintf("[cdi]\nspec_dirs = [%q]\n", specDir),
	})
	e := &env{t: t, d: d, img: img}

	if err := os.WriteFile(filepath.Join(shared, "hello"), []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hookRan := filepath.Join(shared, "hook-ran")
	spec := fmt.Sprintf(`{"cdiVersion": "0.6.0", "kind": "crib.test/fake", "devices": [{
  "name": "fake0",
  "containerEdits": {
    "env": ["FAKE_DEVICE=fake0"],
    "deviceNodes": [{"path": "/dev/fake0", "hostPath": "/dev/null"}],
    "mounts": [{"hostPath": %q, "containerPath": "/fake0", "options": ["bind", "ro"]}],
    "hooks": [{"hookName": "createRuntime", "path": "/bin/sh", "args": ["sh", "-c", "echo ran > %s"]}]
  }}]}`, shared, hookRan)
	if err := os.WriteFile(filepath.Join(specDir, "fake.json"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}

	pod := e.podConfig("cdi")
	podID := e.runPod(pod)
	cfg := e.ctrConfig("cdi", "sleep", "3600")
	cfg.CDIDevices = []*runtimeapi.CDIDevice{{Name: "crib.test/fake=fake0"}}
	id := e.run(podID, pod, cfg)

	// /dev/null is character device 1,3.
	if r := e.exec(id, "ls", "-l", "/dev/fake0"); r.ExitCode != 0 || !strings.HasPrefix(string(r.Stdout), "c") || !strings.Contains(string(r.Stdout), "1,   3") {
		t.Errorf("ls -l /dev/fake0: exit %d, %q %q; want a character device 1,3", r.ExitCode, r.Stdout, r.Stderr)
	}
	if r := e.exec(id, "sh", "-c", "echo hi > /dev/fake0"); r.ExitCode != 0 {
		t.Errorf("writing /dev/fake0: exit %d, %q; the device cgroup should allow it", r.ExitCode, r.Stderr)
	}
	// The busybox image has no printenv.
	if r := e.exec(id, "sh", "-c", "echo $FAKE_DEVICE"); r.ExitCode != 0 || strings.TrimSpace(string(r.Stdout)) != "fake0" {
		t.Errorf("echo $FAKE_DEVICE: exit %d, %q; want fake0", r.ExitCode, r.Stdout)
	}
	if r := e.exec(id, "cat", "/fake0/hello"); r.ExitCode != 0 || string(r.Stdout) != "from the host\n" {
		t.Errorf("cat /fake0/hello: exit %d, %q %q", r.ExitCode, r.Stdout, r.Stderr)
	}
	if r := e.exec(id, "touch", "/fake0/new"); r.ExitCode == 0 {
		t.Errorf("the CDI mount is writable")
	}
	if data, err := os.ReadFile(hookRan); err != nil || string(data) != "ran\n" {
		t.Errorf("the createRuntime hook did not run: %q, %v", data, err)
	}

	before := listContainers(t, e)
	bad := e.ctrConfig("unknown", "sleep", "3600")
	bad.CDIDevices = []*runtimeapi.CDIDevice{{Name: "crib.test/fake=nope"}}
	_, err := e.rt().CreateContainer(e.ctx(), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: bad, SandboxConfig: pod})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "crib.test/fake=nope") {
		t.Fatalf("CreateContainer with an unknown CDI device: %v, want InvalidArgument naming it", err)
	}
	if after := listContainers(t, e); len(after) != len(before) {
		t.Errorf("containers %v after the refused create, want %v", after, before)
	}
	bundles, err := os.ReadDir(filepath.Join(d.Root, "containers"))
	if err != nil || len(bundles) != 1 || bundles[0].Name() != id {
		t.Errorf("bundles after the refused create: %v, %v; want %s alone", bundles, err, id)
	}
	// The same name works once the kubelet asks for a known device: the
	// refused create reserved nothing.
	bad.CDIDevices = nil
	bad.Annotations = map[string]string{"cdi.k8s.io/test": "crib.test/fake=fake0"}
	second := e.run(podID, pod, bad)
	if r := e.exec(second, "sh", "-c", "echo $FAKE_DEVICE"); strings.TrimSpace(string(r.Stdout)) != "fake0" {
		t.Errorf("$FAKE_DEVICE in the container asking by annotation: %q", r.Stdout)
	}
}

func listContainers(t *testing.T, e *env) []string {
	t.Helper()
	resp, err := e.rt().ListContainers(e.ctx(), &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatalf("ListContainers: %v", err)
	}
	var ids []string
	for _, c := range resp.Containers {
		ids = append(ids, c.Id)
	}
	return ids
}
