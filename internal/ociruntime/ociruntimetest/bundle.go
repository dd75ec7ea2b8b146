package ociruntimetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/crib-dev/crib/internal/ociruntime"
)

// Busybox is the static busybox binary copied into test root filesystems.
const Busybox = "/bin/busybox"

// applets are linked to busybox in every test root filesystem.
var applets = []string{"sh", "sleep", "cat", "echo", "ls", "ps", "kill", "head", "seq", "yes", "true", "false", "tr", "printf", "env", "readlink", "grep", "tty", "stty"}

// RequireRuntime skips the test unless it runs as root with runc and
// busybox available.
func RequireRuntime(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		t.Skip("needs runc")
	}
	if _, err := os.Stat(Busybox); err != nil {
		t.Skip("needs " + Busybox)
	}
}

// NewRuntime returns a runc Runtime whose state root is a temporary
// directory of the test.
func NewRuntime(t testing.TB) *ociruntime.Runtime {
	t.Helper()
	return &ociruntime.Runtime{Binary: "runc", Root: t.TempDir()}
}

// ID returns a fresh container id.
func ID(t testing.TB) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "crib-test-" + hex.EncodeToString(b)
}

// NewBundle creates a bundle directory with a busybox root filesystem and
// a config.json running args (non-terminal, no network namespace, cgroup
// /<id>). edit, when not nil, adjusts the spec before it is
// written.
func NewBundle(t testing.TB, id string, args []string, edit func(*specs.Spec)) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "rootfs", "bin")
	for _, d := range []string{bin, filepath.Join(dir, "rootfs", "proc"), filepath.Join(dir, "rootfs", "dev"),
		filepath.Join(dir, "rootfs", "sys"), filepath.Join(dir, "rootfs", "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(Busybox)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "busybox"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, a := range applets {
		if err := os.Symlink("busybox", filepath.Join(bin, a)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "runc", "spec", "--bundle", dir).CombinedOutput(); err != nil {
		t.Fatalf("runc spec: %v: %s", err, out)
	}
	spec := readSpec(t, dir)
	spec.Process.Terminal = false
	spec.Process.Args = args
	spec.Process.Env = []string{"PATH=/bin", "HOME=/"}
	spec.Root.Readonly = false
	spec.Linux.CgroupsPath = "/" + id
	var ns []specs.LinuxNamespace
	for _, n := range spec.Linux.Namespaces {
		if n.Type != specs.NetworkNamespace {
			ns = append(ns, n)
		}
	}
	spec.Linux.Namespaces = ns
	if edit != nil {
		edit(spec)
	}
	writeSpec(t, dir, spec)
	return dir
}

func readSpec(t testing.TB, dir string) *specs.Spec {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s specs.Spec
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func writeSpec(t testing.TB, dir string, s *specs.Spec) {
	t.Helper()
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Create runs `create` for id from bundle with /dev/null as the
// container's stdio, and registers a forced delete as cleanup.
func Create(t testing.TB, r *ociruntime.Runtime, id, bundle string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Cleanup(func() { Cleanup(t, r, id) })
	args := r.CreateArgs(id, ociruntime.CreateOpts{Bundle: bundle, PidFile: filepath.Join(bundle, "init.pid")})
	// The container inherits runc's stdio: give it a file, not a pipe
	// that would keep the command from completing.
	outPath := filepath.Join(bundle, "create.out")
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, r.Binary, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		b, _ := os.ReadFile(outPath)
		t.Fatalf("runc create: %v: %s", err, b)
	}
}

// Cleanup force-deletes container id, reporting failures.
func Cleanup(t testing.TB, r *ociruntime.Runtime, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Delete(ctx, id, true); err != nil {
		t.Errorf("cleanup: %v", err)
	}
}

// WaitStatus polls the runtime until container id has status want.
func WaitStatus(t testing.TB, r *ociruntime.Runtime, id, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := r.State(context.Background(), id)
		if err == nil && s.Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %s never reached %q: last %+v, %v", id, want, s, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
