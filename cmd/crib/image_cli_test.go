package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/api"
	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/testutil"
)

// cribImage runs `crib image SUB --config ... --state ... ARGS...` against
// d and returns its stdout; a failure fails the test.
func cribImage(t *testing.T, d *testutil.Daemon, sub string, args ...string) string {
	t.Helper()
	out, err := cribImageErr(t, d, sub, args...)
	if err != nil {
		t.Fatalf("crib image %s %s: %v\n%s", sub, strings.Join(args, " "), err, out)
	}
	return out
}

func cribImageErr(t *testing.T, d *testutil.Daemon, sub string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	argv := append([]string{"image", sub, "--config", d.Config, "--state", d.State}, args...)
	cmd := exec.CommandContext(ctx, testutil.BuildCrib(t), argv...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out) + stderr.String(), err
	}
	return string(out), nil
}

func inspect(t *testing.T, d *testutil.Daemon, ref string) api.ImageInfo {
	t.Helper()
	var info api.ImageInfo
	out := cribImage(t, d, "inspect", ref)
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("crib image inspect %s printed %q: %v", ref, out, err)
	}
	return info
}

// randomImage writes a docker archive of a small random image tagged ref.
func randomImage(t *testing.T, ref string) string {
	t.Helper()
	img, err := random.Image(2048, 2)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "random.tar")
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestImageLsInspectSaveLoadRm(t *testing.T) {
	img := testutil.Busybox(t)
	d := testutil.StartDaemon(t, testutil.Options{Image: &img})
	other := testutil.StartDaemon(t, testutil.Options{})

	ls := cribImage(t, d, "ls")
	repo, tag := splitTag(mustNormalize(t, img.Ref))
	if !strings.Contains(ls, "IMAGE ID") || !strings.Contains(ls, repo) || !strings.Contains(ls, tag) {
		t.Fatalf("crib image ls does not name %s:\n%s", img.Ref, ls)
	}
	info := inspect(t, d, img.Ref)
	if !strings.HasPrefix(info.ID, "sha256:") || len(info.ChainIDs) == 0 || info.Config == nil {
		t.Fatalf("crib image inspect %s = %+v, want an id, chain ids and a config", img.Ref, info)
	}
	if !strings.Contains(ls, info.ID[7:19]) {
		t.Errorf("crib image ls does not show the 12-digit id %s:\n%s", info.ID[7:19], ls)
	}

	for _, format := range []string{"oci", "docker"} {
		t.Run("save-"+format, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "img.tar")
			cribImage(t, d, "save", "--format", format, "-o", out, img.Ref)
			cribImage(t, other, "load", out)
			got := inspect(t, other, img.Ref)
			if got.ID != info.ID {
				t.Errorf("saved as %s and loaded: id %s, want %s", format, got.ID, info.ID)
			}
			for i := 0; i < 2; i++ { // idempotent
				cribImage(t, other, "rm", img.Ref)
			}
			if ls := cribImage(t, other, "ls"); strings.Contains(ls, repo) {
				t.Errorf("after rm, crib image ls still shows %s:\n%s", repo, ls)
			}
			if _, err := cribImageErr(t, other, "inspect", img.Ref); err == nil {
				t.Errorf("crib image inspect of a removed image succeeded")
			}
		})
	}
}

func TestImageWithoutDaemon(t *testing.T) {
	img := testutil.Busybox(t)
	d := testutil.StartDaemon(t, testutil.Options{Image: &img})
	id := inspect(t, d, img.Ref).ID
	d.Stop(t)

	if ls := cribImage(t, d, "ls"); !strings.Contains(ls, id[7:19]) {
		t.Errorf("crib image ls without a daemon does not show %s:\n%s", id[7:19], ls)
	}
	if got := inspect(t, d, img.Ref).ID; got != id {
		t.Errorf("crib image inspect without a daemon: id %s, want %s", got, id)
	}
	out := filepath.Join(t.TempDir(), "img.tar")
	cribImage(t, d, "save", "-o", out, img.Ref)
	if fi, err := os.Stat(out); err != nil || fi.Size() == 0 {
		t.Errorf("crib image save without a daemon wrote nothing: %v", err)
	}
	for _, sub := range [][]string{{"rm", img.Ref}, {"prune"}} {
		msg, err := cribImageErr(t, d, sub[0], sub[1:]...)
		if err == nil || !strings.Contains(msg, "no crib daemon") {
			t.Errorf("crib image %s without a daemon = %v, %q; want a no-daemon error", sub[0], err, msg)
		}
	}
}

func TestImagePull(t *testing.T) {
	if err := registryAnswers(); err != nil {
		t.Skipf("loopback registry not usable: %v", err)
	}
	d := testutil.StartDaemon(t, testutil.Options{
		Registries: map[string][]string{"registry.k8s.io": {testutil.LoopbackRegistry}},
	})
	ref := testutil.RegistryBusyboxRef
	out := cribImage(t, d, "pull", ref)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "pulled "+ref+" sha256:") {
		t.Fatalf("crib image pull output ends %q, want the image id:\n%s", last, out)
	}
	// Plain output (not a terminal): one line per progress report, some
	// naming a layer and its bytes.
	if len(lines) < 2 || !strings.Contains(lines[0], "/") {
		t.Errorf("crib image pull printed no progress lines:\n%s", out)
	}
	id := strings.TrimPrefix(last, "pulled "+ref+" ")
	if got := inspect(t, d, ref).ID; got != id {
		t.Errorf("inspect after pull: id %s, want %s", got, id)
	}
	if ls := cribImage(t, d, "ls"); !strings.Contains(ls, "registry.k8s.io/e2e-test-images/busybox") {
		t.Errorf("crib image ls does not show the pulled image:\n%s", ls)
	}
	if _, err := cribImageErr(t, d, "pull", "registry.k8s.io/e2e-test-images/no-such-image:1"); err == nil {
		t.Errorf("pulling a missing image succeeded")
	}
}

func TestImagePrune(t *testing.T) {
	img := testutil.Busybox(t)
	d := testutil.StartDaemon(t, testutil.Options{Image: &img})
	unused := "example.com/crib-test/unused:1"
	d.LoadImage(t, randomImage(t, unused))
	used := inspect(t, d, img.Ref).ID
	unusedID := inspect(t, d, unused).ID

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pod := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "prune", Namespace: "cli", Uid: "uid-prune"},
		LogDirectory: filepath.Join(d.LogDir, "prune"),
		Linux:        &runtimeapi.LinuxPodSandboxConfig{},
	}
	podResp, err := d.Runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pod})
	if err != nil {
		t.Fatal(err)
	}
	ctr, err := d.Runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId:  podResp.PodSandboxId,
		SandboxConfig: pod,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "sleeper"},
			Image:    &runtimeapi.ImageSpec{Image: img.Ref},
			Command:  []string{"sleep", "600"},
			LogPath:  "sleeper.log",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ctr.ContainerId}); err != nil {
		t.Fatal(err)
	}

	out := cribImage(t, d, "prune")
	if !strings.Contains(out, "removed "+unusedID) || strings.Contains(out, used) {
		t.Fatalf("crib image prune removed the wrong images (want %s gone, %s kept):\n%s", unusedID, used, out)
	}
	if _, err := cribImageErr(t, d, "inspect", unused); err == nil {
		t.Errorf("the unused image survived the prune")
	}
	if got := inspect(t, d, img.Ref).ID; got != used {
		t.Errorf("the image in use: id %s, want %s", got, used)
	}
	if _, err := d.Runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: podResp.PodSandboxId}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podResp.PodSandboxId}); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(filepath.Join(d.LogDir, "prune"))
}

func registryAnswers() error {
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(testutil.LoopbackRegistry + "/v2/")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /v2/: %s", resp.Status)
	}
	return nil
}

func mustNormalize(t *testing.T, ref string) string {
	t.Helper()
	n, err := image.Normalize(ref)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
