package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/crib-dev/crib/internal/config"
)

func TestMain(m *testing.M) {
	os.Exit(Main(m))
}

func TestConfigTOMLIsCribs(t *testing.T) {
	d := &Daemon{Dir: "/tmp/d", Root: "/tmp/r", State: "/tmp/s", Socket: "/tmp/s/crib.sock", CgroupParent: "/crib-it-1",
		Bridge: "cribt7", Subnet: "10.100.7.0/24", NRISocket: "/tmp/d/nri.sock"}
	data := d.configTOML("debug", map[string][]string{"registry.k8s.io": {"http://127.0.0.1:5000"}})
	cfg := config.Default()
	if err := config.Decode(data, &cfg); err != nil {
		t.Fatalf("crib rejects the harness config: %v\n%s", err, data)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("invalid harness config: %v\n%s", err, data)
	}
	got := []string{cfg.Root, cfg.State, cfg.Socket, cfg.LogLevel, cfg.CgroupParent, cfg.Network.ConfDir, cfg.Network.Bridge, cfg.Network.Subnet}
	want := []string{"/tmp/r", "/tmp/s", "/tmp/s/crib.sock", "debug", "/crib-it-1", "/tmp/d/cni", "cribt7", "10.100.7.0/24"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"http://127.0.0.1:5000"}, cfg.Registries["registry.k8s.io"].Mirrors); diff != "" {
		t.Errorf("mirrors (-want +got):\n%s", diff)
	}
}

// TestLeakCheck plants one leak of each kind next to a daemon and checks
// that Leaks reports every one and forceClean removes them.
func TestLeakCheck(t *testing.T) {
	d := StartDaemon(t, Options{})
	if leaks := d.Leaks(); len(leaks) != 0 {
		t.Fatalf("a fresh daemon has leaks: %v", leaks)
	}

	mnt := filepath.Join(d.State, "sandboxes", "planted")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	proc := exec.Command("/bin/sleep", "60")
	proc.Args[0] = filepath.Join(d.Root, "planted-process")
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = proc.Process.Kill()
		_ = proc.Wait()
	})
	cgroup := filepath.Join("/sys/fs/cgroup", "pids", d.CgroupParent, "planted")
	if Unified() {
		cgroup = filepath.Join("/sys/fs/cgroup", d.CgroupParent, "planted")
	}
	if err := os.MkdirAll(cgroup, 0o755); err != nil {
		t.Logf("no pids cgroup hierarchy to plant in: %v", err)
		cgroup = ""
	}
	dir := filepath.Join(d.Root, "containers", "planted")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	leaks := strings.Join(d.Leaks(), "\n")
	want := []string{"mount " + mnt, "process ", "planted-process", "directory " + dir, "directory " + mnt}
	if cgroup != "" {
		want = append(want, "cgroup "+cgroup)
	}
	for _, w := range want {
		if !strings.Contains(leaks, w) {
			t.Errorf("Leaks does not report %q; it reports:\n%s", w, leaks)
		}
	}

	if err := d.forceClean(); err != nil {
		t.Fatal(err)
	}
	if err := proc.Wait(); err == nil {
		t.Error("the planted process was not killed")
	}
	for _, p := range []string{filepath.Join(d.State, "sandboxes", "planted"), dir} {
		if err := os.Remove(p); err != nil {
			t.Errorf("remove planted dir after forceClean: %v", err)
		}
	}
	if leaks := d.Leaks(); len(leaks) != 0 {
		t.Errorf("leaks after forceClean: %v", leaks)
	}
}
