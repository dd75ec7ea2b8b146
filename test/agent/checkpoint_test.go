package agenttest

import (
	"archive/tar"
	"bytes"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/statusapi"
	"github.com/crib-dev/crib/internal/testutil"
)

// counterScript counts in /tmp/c, ten times a second, each count replacing
// the file whole so that a reader never sees it empty.
const counterScript = "i=0; while true; do echo $i > /tmp/c.new; mv /tmp/c.new /tmp/c; i=$((i+1)); sleep 0.1; done"

// TestCheckpointRestore checkpoints a counting container of an agent's pod
// with `crib checkpoint` (archive named as the kubelet names it), then runs
// a pod whose image is that archive: the agent hands the path to the
// runtime unpulled, the runtime restores, and the counter goes on from
// where it was; `crib ps` marks the restored container and only it. The
// CLI's refusals (unknown pod or container, a stopped container, a path
// that cannot be written) say what is wrong. It needs a crib daemon with
// a criu that dumps here.
func TestCheckpointRestore(t *testing.T) {
	testutil.RequiresRoot(t)
	if os.Getenv(EndpointEnv) != "" {
		t.Skip("restoring from an archive path is CRI-O's and crib's; not asked of another runtime")
	}
	testutil.CriuRestores(t)
	env := newRuntimeEnvConfig(t, testutil.CriuConfig())
	h := startAgent(t, env)
	srv := httptest.NewServer(statusapi.Handler(h.Store(), h.Agent().Events(), statusapi.NewMetrics()))
	t.Cleanup(srv.Close)
	crib := testutil.BuildCrib(t)
	addr := strings.TrimPrefix(srv.URL, "http://")
	cli := func(dir string, args ...string) (stdout, stderr string, code int) {
		t.Helper()
		flags := []string{args[0], "--status-address", addr}
		if args[0] == "checkpoint" {
			flags = append(flags, "--runtime-endpoint", env.endpoint)
		}
		cmd := exec.Command(crib, append(flags, args[1:]...)...)
		cmd.Dir = dir
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("crib %v: %v", args, err)
		}
		return o.String(), e.String(), code
	}

	src := podSpec("ckpt-src", env.shell("counter", counterScript))
	h.writePod(t, src)
	h.waitFor(t, src.Name, "counter running", longWait, func(p *corev1.Pod) bool { return running(p, "counter") })
	counter := func(pod string) int {
		p, _ := h.Store().Lookup("default", pod)
		cs := containerStatus(p, "counter")
		if cs == nil || cs.State.Running == nil {
			return -1
		}
		_, id, _ := strings.Cut(cs.ContainerID, "://")
		out, _, err := env.rt.ExecSync(rpcCtx(t), id, []string{"cat", "/tmp/c"}, 0)
		if err != nil {
			return -1
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			return -1
		}
		return n
	}
	waitUntil(t, shortWait, "the source counter to pass 20", func() bool { return counter(src.Name) > 20 })

	// Refusals, each naming what is wrong; nothing is written.
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown pod", []string{"checkpoint", "no-such-pod"}, "pod default/no-such-pod not found"},
		{"unknown container", []string{"checkpoint", "-c", "nope", src.Name}, `no container "nope"`},
		{"missing directory", []string{"checkpoint", "-o", filepath.Join(dir, "missing", "a.tar"), src.Name}, "-o " + filepath.Join(dir, "missing", "a.tar") + ": its directory"},
		{"a directory", []string{"checkpoint", "-o", dir, src.Name}, "a directory is there already"},
	} {
		if _, stderr, code := cli(dir, tc.args...); code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: crib %v: exit %d, stderr %q; want 1 saying %q", tc.name, tc.args, code, stderr, tc.want)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("refused checkpoints left %v", left)
	}

	// The archive, at the kubelet's name in the current directory.
	stdout, stderr, code := cli(dir, "checkpoint", src.Name)
	if code != 0 {
		t.Fatalf("crib checkpoint %s: exit %d: %s", src.Name, code, stderr)
	}
	archive := strings.TrimSpace(stdout)
	if filepath.Dir(archive) != dir || !strings.HasPrefix(filepath.Base(archive), "checkpoint-ckpt-src_default-counter-") || !strings.HasSuffix(archive, ".tar") {
		t.Fatalf("crib checkpoint wrote %q, want %s/checkpoint-ckpt-src_default-counter-<time>.tar", archive, dir)
	}
	at := archivedCount(t, archive)
	if at <= 20 {
		t.Fatalf("the archive's /tmp/c is %d, want past 20", at)
	}
	if n := counter(src.Name); n < at {
		t.Errorf("the source counter is at %d after its checkpoint at %d: it did not keep running", n, at)
	}
	// The same again, to -o: a file there already is refused.
	if _, stderr, code := cli(dir, "checkpoint", "-o", archive, src.Name); code != 1 || !strings.Contains(stderr, "a file is there already") {
		t.Errorf("checkpoint over an existing archive: exit %d, stderr %q", code, stderr)
	}

	// A pod whose image is the archive goes on counting from there.
	dst := podSpec("ckpt-dst", corev1.Container{Name: "counter", Image: archive, Command: []string{"sh", "-c", counterScript}})
	h.writePod(t, dst)
	h.waitFor(t, dst.Name, "restored counter running", longWait, func(p *corev1.Pod) bool { return running(p, "counter") })
	if n := counter(dst.Name); n >= 0 && n < at {
		t.Fatalf("restored counter at %d, below the checkpoint's %d: started afresh", n, at)
	}
	waitUntil(t, shortWait, "the restored counter to count on", func() bool { return counter(dst.Name) > at+5 })
	p := h.waitFor(t, dst.Name, "marked restored", shortWait, func(p *corev1.Pod) bool {
		return p != nil && p.Annotations[labels.Restored] == "counter"
	})
	if cs := containerStatus(p, "counter"); cs.Image != archive {
		t.Errorf("restored container's image %q, want the archive %q", cs.Image, archive)
	}
	ps, stderr, code := cli(dir, "ps")
	if code != 0 {
		t.Fatalf("crib ps: exit %d: %s", code, stderr)
	}
	for _, line := range strings.Split(ps, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[1] != "counter" {
			continue
		}
		restored := strings.Contains(line, "Running (restored)")
		if want := f[2] == dst.Name; restored != want {
			t.Errorf("crib ps line %q: restored shown %v, want %v", line, restored, want)
		}
	}
	t.Logf("crib ps:\n%s", ps)

	// A container that is not running cannot be checkpointed.
	done := podSpec("ckpt-done", env.shell("once", "true"))
	done.Spec.RestartPolicy = corev1.RestartPolicyNever
	h.writePod(t, done)
	h.waitFor(t, done.Name, "succeeded", longWait, func(p *corev1.Pod) bool { return p != nil && p.Status.Phase == corev1.PodSucceeded })
	if _, stderr, code := cli(dir, "checkpoint", done.Name); code != 1 || !strings.Contains(stderr, `container "once" in pod default/ckpt-done is not running`) {
		t.Errorf("checkpoint of an exited container: exit %d, stderr %q", code, stderr)
	}
	if left := h.drain(); len(left) > 0 {
		t.Fatalf("after all manifests were removed the runtime still holds %v", left)
	}
}

// archivedCount is the count in /tmp/c of the writable layer archived in
// the checkpoint archive at path.
func archivedCount(t *testing.T, path string) int {
	t.Helper()
	diff := tarMember(t, path, nil, "rootfs-diff.tar")
	c := tarMember(t, "", diff, "tmp/c")
	n, err := strconv.Atoi(strings.TrimSpace(string(c)))
	if err != nil {
		t.Fatalf("the archive's tmp/c is %q: %v", c, err)
	}
	return n
}

// tarMember is the content of name in the tar at path, or in data when
// path is "".
func tarMember(t *testing.T, path string, data []byte, name string) []byte {
	t.Helper()
	var r io.Reader = bytes.NewReader(data)
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r = f
	}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatalf("%s has no %s: %v", path, name, err)
		}
		if strings.TrimPrefix(hdr.Name, "./") == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

// waitUntil polls cond every pollEvery until it holds, failing the test
// after timeout.
func waitUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(pollEvery)
	}
}
