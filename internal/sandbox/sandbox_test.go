package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/metastore"
	"github.com/crib-dev/crib/internal/mount"
	"github.com/crib-dev/crib/internal/network"
	"github.com/crib-dev/crib/internal/pause"
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

// fakeNetwork records attachments and hands out one address per pod.
type fakeNetwork struct {
	mu        sync.Mutex
	setups    []string
	teardowns []string
	setupErr  error
}

func (f *fakeNetwork) Setup(_ context.Context, p network.Pod) ([]net.IP, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.setupErr != nil {
		return nil, f.setupErr
	}
	f.setups = append(f.setups, p.ID)
	return []net.IP{net.IPv4(10, 88, 0, byte(len(f.setups)))}, nil
}

func (f *fakeNetwork) Teardown(_ context.Context, p network.Pod) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.teardowns = append(f.teardowns, p.ID)
	return nil
}

func newManager(t *testing.T, dir string) (*Manager, *metastore.DB) {
	m, db, _ := newManagerWithNetwork(t, dir)
	return m, db
}

func newManagerWithNetwork(t *testing.T, dir string) (*Manager, *metastore.DB, *fakeNetwork) {
	t.Helper()
	db, err := metastore.Open(filepath.Join(dir, "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fn := &fakeNetwork{}
	m := New(Config{
		StateDir:     filepath.Join(dir, "sandboxes"),
		PauseBinary:  self,
		ShmSize:      16 << 20,
		CgroupDriver: "cgroupfs",
		CgroupParent: "/crib-test",
	}, db, fn, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := m.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m, db, fn
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
	assertNothingHeld(t, m)
}

func TestNetworkAttachedOnce(t *testing.T) {
	requiresRoot(t)
	dir := t.TempDir()
	m, db, fn := newManagerWithNetwork(t, dir)
	defer db.Close()
	ctx := context.Background()
	cfg := podConfig("net", runtimeapi.NamespaceMode_CONTAINER)
	cfg.PortMappings = []*runtimeapi.PortMapping{{ContainerPort: 80, HostPort: 8080}}
	cfg.Annotations = map[string]string{ingressBandwidthAnnotation: "10M"}
	id, err := m.Run(ctx, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := m.Get(id)
	if !s.NetworkAttached || len(s.IPs) != 1 || s.IPs[0] != "10.88.0.1" {
		t.Errorf("sandbox network after Run: attached=%v IPs=%v", s.NetworkAttached, s.IPs)
	}
	for i := 0; i < 3; i++ {
		if err := m.Stop(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{id}, fn.teardowns); diff != "" {
		t.Errorf("teardowns (-want +got):\n%s", diff)
	}
	assertNothingLeft(t, dir)

	// A failed attachment rolls everything back, the network included.
	fn.setupErr = errors.New("no IPs left")
	if _, err := m.Run(ctx, podConfig("full", runtimeapi.NamespaceMode_CONTAINER), ""); err == nil {
		t.Fatal("Run succeeded without a network")
	}
	if len(fn.teardowns) != 2 {
		t.Errorf("teardowns after a failed attach = %v, want the rollback's", fn.teardowns)
	}
	if len(m.List()) != 0 {
		t.Errorf("sandboxes after a failed Run: %v", m.List())
	}
	assertNothingLeft(t, dir)

	cfg = podConfig("badbw", runtimeapi.NamespaceMode_CONTAINER)
	cfg.Annotations = map[string]string{egressBandwidthAnnotation: "lots"}
	fn.setupErr = nil
	if _, err := m.Run(ctx, cfg, ""); !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), egressBandwidthAnnotation) {
		t.Errorf("Run with a bad bandwidth annotation = %v, want InvalidArgument naming it", err)
	}
	assertNothingLeft(t, dir)
}

func TestParseQuantity(t *testing.T) {
	for in, want := range map[string]uint64{"10M": 10e6, "1Gi": 1 << 30, "500k": 500e3, "42": 42} {
		if got, err := parseQuantity(in); err != nil || got != want {
			t.Errorf("parseQuantity(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "M", "-1M", "1.5G", "0"} {
		if _, err := parseQuantity(in); err == nil {
			t.Errorf("parseQuantity(%q) succeeded", in)
		}
	}
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

// TestConcurrentStopRemove: a Stop racing a Remove never writes the removed
// sandbox's record back.
func TestConcurrentStopRemove(t *testing.T) {
	requiresRoot(t)
	dir := t.TempDir()
	m, db := newManager(t, dir)
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		id, err := m.Run(ctx, podConfig(fmt.Sprintf("race-%d", i), runtimeapi.NamespaceMode_CONTAINER), "")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, op := range []func(context.Context, string) error{m.Remove, m.Stop, m.Stop, m.Stop} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := op(ctx, id); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if err := m.Remove(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	assertNothingHeld(t, m)
	db.Close()
	m, db = newManager(t, dir)
	defer db.Close()
	if got := m.List(); len(got) != 0 {
		t.Errorf("sandboxes after a restart: %d, want none", len(got))
	}
	assertNothingLeft(t, dir)
}

// assertNothingHeld fails if m keeps anything in memory of a sandbox once
// every sandbox is removed.
func assertNothingHeld(t *testing.T, m *Manager) {
	t.Helper()
	locks := 0
	m.locks.Range(func(any, any) bool { locks++; return true })
	m.mu.RLock()
	byID := len(m.byID)
	m.mu.RUnlock()
	if locks != 0 || byID != 0 {
		t.Errorf("after every sandbox is removed: %d locks, %d sandboxes held, want none", locks, byID)
	}
}
