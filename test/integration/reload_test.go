package integration

import (
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/config"
)

// TestReloadOnSIGHUP: a registry mirror added in a drop-in is used after
// a SIGHUP, without a restart (the daemon's pid and a running container
// stay); a changed key that needs a restart is logged as such; a bad
// drop-in is logged with its file and line and leaves the configuration in
// force.
func TestReloadOnSIGHUP(t *testing.T) {
	e := newEnv(t)
	pod := e.podConfig("reload")
	podID := e.runPod(pod)
	ctr := e.run(podID, pod, e.ctrConfig("sleeper", "sleep", "3600"))
	before := e.waitState(ctr, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	pid := e.d.Pid()

	// The image exists only in a registry that the reference's host,
	// which does not resolve, reaches through a mirror.
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	pushed, err := name.ParseReference(strings.TrimPrefix(reg.URL, "http://")+"/reload/img:1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(pushed, img); err != nil {
		t.Fatal(err)
	}
	const ref = "mirror-only.invalid/reload/img:1"
	pull := func() error {
		_, err := e.d.Images.PullImage(e.ctx(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		return err
	}
	if err := pull(); err == nil {
		t.Fatalf("pull %s succeeded before the mirror was configured", ref)
	}
	altPod := e.podConfig("reload-alt")
	runAlt := func() (string, error) {
		resp, err := e.rt().RunPodSandbox(e.ctx(), &runtimeapi.RunPodSandboxRequest{Config: altPod, RuntimeHandler: "reload-alt"})
		return resp.GetPodSandboxId(), err
	}
	if _, err := runAlt(); err == nil {
		t.Fatal("a pod ran with the runtime handler reload-alt before it was configured")
	}

	dropIns := config.DropInDir(e.d.Config)
	if err := os.MkdirAll(dropIns, 0o755); err != nil {
		t.Fatal(err)
	}
	mirror := filepath.Join(dropIns, "50-mirror.toml")
	writeFile(t, mirror, fmt.Sprintf("shm_size = 1234567\n\n[registries.\"mirror-only.invalid\"]\nmirrors = [%q]\n\n[runtimes.reload-alt]\npath = \"runc\"\n", reg.URL))
	reload := func(n int) {
		t.Helper()
		if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, fmt.Sprintf("reload %d in the daemon log", n), func() bool {
			log := e.d.ReadLog()
			return strings.Count(log, "configuration reloaded")+strings.Count(log, "configuration not reloaded") >= n
		})
	}
	reload(1)
	if err := pull(); err != nil {
		t.Fatalf("pull %s through the reloaded mirror: %v", ref, err)
	}
	// A runtime handler nothing used is added live.
	altID, err := runAlt()
	if err != nil {
		t.Fatalf("RunPodSandbox with the reloaded runtime handler reload-alt: %v", err)
	}
	alt := e.run(altID, altPod, e.ctrConfig("alt", "sleep", "3600"))
	e.waitState(alt, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	log := e.d.ReadLog()
	if !strings.Contains(log, "configuration change needs a restart of crib; not applied") || !strings.Contains(log, "key=shm_size") {
		t.Errorf("the changed shm_size is not logged as needing a restart; daemon log:\n%s", log)
	}

	// A bad drop-in: the error names file, line and key, and the mirror
	// stays in force.
	bad := filepath.Join(dropIns, "60-bad.toml")
	writeFile(t, bad, "log_level = \"debug\"\nno_such_key = 1\n")
	if _, err := e.d.Images.RemoveImage(e.ctx(), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		t.Fatal(err)
	}
	reload(2)
	log = e.d.ReadLog()
	if !strings.Contains(log, "configuration not reloaded") || !strings.Contains(log, bad+":2") || !strings.Contains(log, "no_such_key") {
		t.Errorf("the bad drop-in is not reported with file:line and key; daemon log:\n%s", log)
	}
	if err := pull(); err != nil {
		t.Fatalf("pull %s after a bad reload: %v", ref, err)
	}

	if e.d.Pid() != pid {
		t.Errorf("the daemon's pid changed from %d to %d", pid, e.d.Pid())
	}
	after := e.waitState(ctr, runtimeapi.ContainerState_CONTAINER_RUNNING, time.Second)
	if after.StartedAt != before.StartedAt {
		t.Errorf("the container was restarted: started at %d, now %d", before.StartedAt, after.StartedAt)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
