package crictl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crib-dev/crib/internal/testutil"
)

// crictlPath is where shared/conformance/setup.sh installs crictl.
const crictlPath = "/usr/local/bin/crictl"

// pullRef is the image the pull step fetches through the daemon's mirror
// of registry.k8s.io.
const pullRef = testutil.RegistryBusyboxRef

// findCrictl returns the crictl binary, or skips the test.
func findCrictl(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(crictlPath); err == nil {
		return crictlPath
	}
	if p, err := exec.LookPath("crictl"); err == nil {
		return p
	}
	t.Skipf("crictl is not installed at %s or on PATH (shared/conformance/setup.sh installs it)", crictlPath)
	return ""
}

// cli runs crictl against one daemon.
type cli struct {
	t    *testing.T
	bin  string
	sock string
}

// run runs crictl with args and returns its stdout; it fails the test when
// crictl fails.
func (c *cli) run(args ...string) string {
	c.t.Helper()
	out, err := c.try(args...)
	if err != nil {
		c.t.Fatalf("crictl %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// try runs crictl with args and returns its stdout, or an error with its
// stderr.
func (c *cli) try(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	endpoint := "unix://" + c.sock
	full := append([]string{"--config", "/dev/null", "--runtime-endpoint", endpoint, "--image-endpoint", endpoint, "--timeout", "30s"}, args...)
	cmd := exec.CommandContext(ctx, c.bin, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	c.t.Logf("crictl %s\n%s%s", strings.Join(args, " "), stdout.String(), stderr.String())
	if err != nil {
		return stdout.String(), errors.New(err.Error() + ": " + strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// decode parses crictl's JSON output into v.
func decode(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("crictl output is not JSON: %v\n%s", err, out)
	}
}

// writeJSON writes v as JSON to a file in dir and returns its path.
func writeJSON(t *testing.T, dir, name string, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// row is the line of a crictl table that contains key, split in fields.
func row(out, key string) []string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, key) {
			return strings.Fields(l)
		}
	}
	return nil
}

// repoAndTag splits an image reference into crictl's IMAGE and TAG
// columns.
func repoAndTag(ref string) (string, string) {
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ref, "latest"
	}
	return ref[:i], ref[i+1:]
}

func TestCrictlPodLifecycle(t *testing.T) {
	testutil.RequiresRoot(t)
	bin := findCrictl(t)
	img := testutil.Busybox(t)
	d := testutil.StartDaemon(t, testutil.Options{
		Image:      &img,
		Registries: map[string][]string{"registry.k8s.io": {testutil.LoopbackRegistry}},
	})
	c := &cli{t: t, bin: bin, sock: d.Socket}
	dir := t.TempDir()

	// Each step depends on the ones before: the first failure ends the
	// test.
	step := func(name string, f func(t *testing.T)) {
		t.Helper()
		if !t.Run(name, func(t *testing.T) { c.t = t; f(t) }) {
			t.FailNow()
		}
		c.t = t
	}

	step("version", func(t *testing.T) {
		out := c.run("version")
		for _, want := range []string{"RuntimeName:  crib", "RuntimeApiVersion:  v1"} {
			if !strings.Contains(out, want) {
				t.Errorf("crictl version does not show %q:\n%s", want, out)
			}
		}
	})

	step("info", func(t *testing.T) {
		var info struct {
			Status struct {
				Conditions []struct {
					Type   string `json:"type"`
					Status bool   `json:"status"`
				} `json:"conditions"`
			} `json:"status"`
		}
		decode(t, c.run("info"), &info)
		ready := false
		for _, cond := range info.Status.Conditions {
			if cond.Type == "RuntimeReady" {
				ready = cond.Status
			}
		}
		if !ready {
			t.Errorf("crictl info: RuntimeReady is not true: %+v", info.Status.Conditions)
		}
	})

	repo, tag := repoAndTag(img.Ref)
	step("images", func(t *testing.T) {
		r := row(c.run("images"), repo+" ")
		if len(r) < 3 || r[0] != repo || r[1] != tag {
			t.Errorf("crictl images has no row %s %s: %q", repo, tag, r)
		}
	})

	step("imagefsinfo", func(t *testing.T) {
		type usage struct {
			FsID struct {
				Mountpoint string `json:"mountpoint"`
			} `json:"fsId"`
			UsedBytes struct {
				Value string `json:"value"`
			} `json:"usedBytes"`
		}
		var fs struct {
			Status struct {
				ImageFilesystems     []usage `json:"imageFilesystems"`
				ContainerFilesystems []usage `json:"containerFilesystems"`
			} `json:"status"`
		}
		decode(t, c.run("imagefsinfo"), &fs)
		if len(fs.Status.ImageFilesystems) == 0 || len(fs.Status.ContainerFilesystems) == 0 {
			t.Fatalf("crictl imagefsinfo lists %d image and %d container filesystems, want both",
				len(fs.Status.ImageFilesystems), len(fs.Status.ContainerFilesystems))
		}
		// One filesystem holds both: the kubelet reads differing
		// mountpoints as separate image and container disks.
		if im, cm := fs.Status.ImageFilesystems[0].FsID.Mountpoint, fs.Status.ContainerFilesystems[0].FsID.Mountpoint; im != cm {
			t.Errorf("image filesystem mountpoint %q, container filesystem mountpoint %q: want the same", im, cm)
		}
		got := fs.Status.ImageFilesystems[0]
		if !strings.HasPrefix(got.FsID.Mountpoint, d.Root) {
			t.Errorf("image filesystem mountpoint %q is not under the daemon's root %s", got.FsID.Mountpoint, d.Root)
		}
		if got.UsedBytes.Value == "" || got.UsedBytes.Value == "0" {
			t.Errorf("image filesystem used bytes = %q with an image stored", got.UsedBytes.Value)
		}
	})

	logDir := filepath.Join(d.LogDir, "crictl-pod")
	podJSON := writeJSON(t, dir, "pod.json", map[string]any{
		"metadata":      map[string]any{"name": "crictl-pod", "namespace": "crictl", "uid": "crictl-uid", "attempt": 0},
		"hostname":      "crictl-host",
		"log_directory": logDir,
		"labels":        map[string]string{"test": "crictl"},
		"linux":         map[string]any{},
	})
	ctrJSON := writeJSON(t, dir, "ctr.json", map[string]any{
		"metadata": map[string]any{"name": "hello"},
		"image":    map[string]any{"image": img.Ref},
		"command":  []string{"sh", "-c", "echo hello-crictl; sleep 3600"},
		"log_path": "hello.log",
		"linux":    map[string]any{},
	})

	var podID, ctrID string
	step("runp", func(t *testing.T) {
		podID = strings.TrimSpace(c.run("runp", podJSON))
		if len(podID) != 64 {
			t.Fatalf("crictl runp printed %q, want a 64-digit pod id", podID)
		}
	})

	step("create", func(t *testing.T) {
		ctrID = strings.TrimSpace(c.run("create", podID, ctrJSON, podJSON))
		if len(ctrID) != 64 {
			t.Fatalf("crictl create printed %q, want a 64-digit container id", ctrID)
		}
	})

	step("start", func(t *testing.T) {
		if out := strings.TrimSpace(c.run("start", ctrID)); out != ctrID {
			t.Errorf("crictl start printed %q, want the container id", out)
		}
	})

	step("ps", func(t *testing.T) {
		r := row(c.run("ps"), ctrID[:13])
		if len(r) == 0 || !containsAll(r, "Running", "hello", podID[:13]) {
			t.Errorf("crictl ps row of %s = %q, want it Running, named hello, in pod %.13s", ctrID[:13], r, podID)
		}
	})

	step("pods", func(t *testing.T) {
		r := row(c.run("pods"), podID[:13])
		if len(r) == 0 || !containsAll(r, "Ready", "crictl-pod", "crictl") {
			t.Errorf("crictl pods row of %s = %q, want it Ready, named crictl-pod in namespace crictl", podID[:13], r)
		}
	})

	step("inspect", func(t *testing.T) {
		var st struct {
			Status struct {
				ID      string `json:"id"`
				State   string `json:"state"`
				LogPath string `json:"logPath"`
			} `json:"status"`
		}
		decode(t, c.run("inspect", ctrID), &st)
		want := filepath.Join(logDir, "hello.log")
		if st.Status.ID != ctrID || st.Status.State != "CONTAINER_RUNNING" || st.Status.LogPath != want {
			t.Errorf("crictl inspect = id %q state %q logPath %q, want %q CONTAINER_RUNNING %q", st.Status.ID, st.Status.State, st.Status.LogPath, ctrID, want)
		}
	})

	step("inspectp", func(t *testing.T) {
		var st struct {
			Status struct {
				ID       string `json:"id"`
				State    string `json:"state"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			} `json:"status"`
		}
		decode(t, c.run("inspectp", podID), &st)
		if st.Status.ID != podID || st.Status.State != "SANDBOX_READY" || st.Status.Metadata.Name != "crictl-pod" {
			t.Errorf("crictl inspectp = id %q state %q name %q, want %q SANDBOX_READY crictl-pod", st.Status.ID, st.Status.State, st.Status.Metadata.Name, podID)
		}
	})

	step("logs", func(t *testing.T) {
		// The container may not have written its line yet.
		deadline := time.Now().Add(testutil.Patience(10 * time.Second))
		for {
			out := c.run("logs", ctrID)
			if out == "hello-crictl\n" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("crictl logs = %q, want %q", out, "hello-crictl\n")
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	step("exec", func(t *testing.T) {
		// crictl ends each stream it prints with newlines of its own.
		if out := c.run("exec", "-s", ctrID, "echo", "hi"); !strings.HasPrefix(out, "hi\n") || strings.TrimSpace(out) != "hi" {
			t.Errorf("crictl exec -s echo hi = %q, want %q", out, "hi\n")
		}
	})

	step("stop", func(t *testing.T) {
		if out := strings.TrimSpace(c.run("stop", "--timeout", "2", ctrID)); out != ctrID {
			t.Errorf("crictl stop printed %q, want the container id", out)
		}
		r := row(c.run("ps", "-a"), ctrID[:13])
		if !containsAll(r, "Exited") {
			t.Errorf("crictl ps -a row of a stopped container = %q, want Exited", r)
		}
	})

	step("rm", func(t *testing.T) {
		if out := strings.TrimSpace(c.run("rm", ctrID)); out != ctrID {
			t.Errorf("crictl rm printed %q, want the container id", out)
		}
		if out := c.run("ps", "-a", "-q"); strings.TrimSpace(out) != "" {
			t.Errorf("crictl ps -a -q after rm = %q, want nothing", out)
		}
	})

	step("stopp", func(t *testing.T) {
		if out := c.run("stopp", podID); !strings.Contains(out, "Stopped sandbox "+podID) {
			t.Errorf("crictl stopp printed %q", out)
		}
		if r := row(c.run("pods"), podID[:13]); !containsAll(r, "NotReady") {
			t.Errorf("crictl pods row of a stopped pod = %q, want NotReady", r)
		}
	})

	step("rmp", func(t *testing.T) {
		if out := c.run("rmp", podID); !strings.Contains(out, "Removed sandbox "+podID) {
			t.Errorf("crictl rmp printed %q", out)
		}
		if out := c.run("pods", "-q"); strings.TrimSpace(out) != "" {
			t.Errorf("crictl pods -q after rmp = %q, want nothing", out)
		}
	})

	// The last two steps need the loopback registry: without it each one
	// skips with the reason (or fails, where CI requires the registry).
	pullRepo, pullTag := repoAndTag(pullRef)
	step("pull", func(t *testing.T) {
		testutil.RequireRegistry(t)
		out := c.run("pull", pullRef)
		if !strings.Contains(out, "Image is up to date for sha256:") {
			t.Errorf("crictl pull printed %q", out)
		}
		r := row(c.run("images"), pullRepo+" ")
		if len(r) < 3 || r[1] != pullTag {
			t.Errorf("crictl images after pull has no row %s %s: %q", pullRepo, pullTag, r)
		}
	})

	step("rmi", func(t *testing.T) {
		testutil.RequireRegistry(t)
		if out := c.run("rmi", pullRef); !strings.Contains(out, "Deleted: "+pullRef) {
			t.Errorf("crictl rmi printed %q", out)
		}
		out := c.run("images")
		if r := row(out, pullRepo+" "); r != nil && r[1] == pullTag {
			t.Errorf("crictl images after rmi still lists %s:\n%s", pullRef, out)
		}
		if img.Ref != pullRef && row(out, repo+" ") == nil {
			t.Errorf("crictl images after rmi of %s lost %s:\n%s", pullRef, img.Ref, out)
		}
	})
}

// containsAll reports whether fields holds every one of want.
func containsAll(fields []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, f := range fields {
			if f == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
