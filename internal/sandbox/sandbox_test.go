package sandbox

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/mount"
	"github.com/crib-dev/crib/internal/pause"
	"github.com/crib-dev/crib/internal/state"
)

// TestMain lets the test binary stand in for crib as `pause`.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "pause" {
		os.Exit(pause.Main())
	}
	os.Exit(m.Run())
}

func requiresRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

func newManager(t *testing.T, dir string) (*Manager, *state.DB) {
	t.Helper()
	db, err := state.Open(filepath.Join(dir, "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m := New(Config{
		StateDir:     filepath.Join(dir, "sandboxes"),
		Self:         self,
		ShmSize:      16 << 20,
		CgroupDriver: "cgroupfs",
		CgroupParent: "/crib-test",
	}, db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := m.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m, db
}

func podConfig(name string, pid runtimeapi.NamespaceMode) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name},
		Hostname: name + "-host",
		DnsConfig: &runtimeapi.DNSConfig{
			Servers: []string{"10.0.0.10"}, Searches: []string{"svc.cluster.local"}, Options: []string{"ndots:5"},
		},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Pid: pid},
		}},
	}
}

func TestRunStopRemove(t *testing.T) {
	requiresRoot(t)
	dir := t.TempDir()
	m, db := newManager(t, dir)
	defer db.Close()
	ctx := context.Background()

	id, err := m.Run(ctx, podConfig("web", runtimeapi.NamespaceMode_POD), "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Get(id[:12])
	if err != nil {
		t.Fatalf("Get by prefix: %v", err)
	}
	if s.State != Ready || s.NetNS == "" || s.IPCNS == "" || s.UTSNS == "" || s.PausePid == 0 {
		t.Fatalf("sandbox after Run = %+v", s)
	}
	if !pause.Alive(s.PausePid, s.PauseStart) {
		t.Error("pause is not running")
	}
	resolv, _ := os.ReadFile(s.ResolvPath())
	if want := "search svc.cluster.local\nnameserver 10.0.0.10\noptions ndots:5\n"; string(resolv) != want {
		t.Errorf("resolv.conf = %q, want %q", resolv, want)
	}
	if ok, _ := mount.IsMountPoint(s.ShmPath); !ok {
		t.Error("/dev/shm of the pod is not mounted")
	}

	if _, err := m.Run(ctx, podConfig("web", runtimeapi.NamespaceMode_POD), ""); !errdefs.IsAlreadyExists(err) {
		t.Errorf("second Run with the same name: %v, want AlreadyExists", err)
	}

	// A restarted manager sees the same sandbox.
	db.Close()
	m, db = newManager(t, dir)
	defer db.Close()
	if got, err := m.Get(id); err != nil || got.State != Ready {
		t.Fatalf("after restore: %+v, %v", got, err)
	}

	for i := 0; i < 2; i++ {
		if err := m.Stop(ctx, id); err != nil {
			t.Fatalf("Stop #%d: %v", i+1, err)
		}
	}
	if pause.Alive(s.PausePid, s.PauseStart) {
		t.Error("pause survived Stop")
	}
	if got, _ := m.Get(id); got.State != NotReady {
		t.Errorf("state after Stop = %s", got.State)
	}
	for i := 0; i < 2; i++ {
		if err := m.Remove(ctx, id); err != nil {
			t.Fatalf("Remove #%d: %v", i+1, err)
		}
	}
	if _, err := m.Get(id); !errdefs.IsNotFound(err) {
		t.Errorf("Get after Remove: %v", err)
	}
	assertNothingLeft(t, dir)
	if _, err := m.Run(ctx, podConfig("web", runtimeapi.NamespaceMode_POD), ""); err != nil {
		t.Errorf("Run after Remove frees the name: %v", err)
	}
	for _, s := range m.List() {
		_ = m.Remove(ctx, s.ID)
	}
	assertNothingLeft(t, dir)
}

func TestHostNamespaces(t *testing.T) {
	requiresRoot(t)
	dir := t.TempDir()
	m, db := newManager(t, dir)
	defer db.Close()
	cfg := podConfig("host", runtimeapi.NamespaceMode_NODE)
	cfg.Linux.SecurityContext.NamespaceOptions.Network = runtimeapi.NamespaceMode_NODE
	cfg.Linux.SecurityContext.NamespaceOptions.Ipc = runtimeapi.NamespaceMode_NODE
	id, err := m.Run(context.Background(), cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := m.Get(id)
	if s.NetNS != "" || s.IPCNS != "" || s.UTSNS != "" || s.PausePid != 0 || s.ShmPath != "/dev/shm" {
		t.Errorf("host-namespace sandbox = %+v", s)
	}
	host, _ := os.Hostname()
	if got, _ := os.ReadFile(s.HostnamePath()); strings.TrimSpace(string(got)) != host {
		t.Errorf("hostname file = %q, want %q", got, host)
	}
	if err := m.Remove(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, dir)
}

func TestRunRejectsBadConfig(t *testing.T) {
	m, db := newManager(t, t.TempDir())
	defer db.Close()
	tests := map[string]struct {
		cfg  *runtimeapi.PodSandboxConfig
		want string
	}{
		"nil":         {nil, "config"},
		"no metadata": {&runtimeapi.PodSandboxConfig{}, "config.metadata"},
		"empty name":  {&runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Namespace: "a", Uid: "b"}}, "metadata.name"},
		"empty uid":   {&runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "a", Namespace: "b"}}, "metadata.uid"},
		"target pid":  {podConfig("x", runtimeapi.NamespaceMode_TARGET), "namespace_options.pid"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := m.Run(context.Background(), tt.cfg, "")
			if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run = %v, want InvalidArgument naming %q", err, tt.want)
			}
		})
	}
	if len(m.List()) != 0 {
		t.Errorf("sandboxes after bad requests: %v", m.List())
	}
}

func assertNothingLeft(t *testing.T, dir string) {
	t.Helper()
	if points, _ := mount.Under(dir); len(points) != 0 {
		t.Errorf("mounts left: %v", points)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "sandboxes"))
	if len(entries) != 0 {
		t.Errorf("sandbox dirs left: %v", entries)
	}
}
