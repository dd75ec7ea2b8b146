package network

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/netns"
	"github.com/crib-dev/crib/internal/testutil"
)

var pluginDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestDefaultConfList(t *testing.T) {
	data, err := DefaultConfList(Defaults{Name: "crib", Bridge: "crib0", Subnet: "10.88.0.0/16", IPAMDataDir: "/var/lib/crib/cni"})
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Name    string `json:"name"`
		Plugins []struct {
			Type string `json:"type"`
			IPAM struct {
				DataDir string `json:"dataDir"`
				Ranges  [][]struct {
					Subnet string `json:"subnet"`
				} `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	if list.Name != "crib" || len(list.Plugins) != 3 || list.Plugins[0].Type != "bridge" || list.Plugins[1].Type != "portmap" ||
		list.Plugins[0].IPAM.Ranges[0][0].Subnet != "10.88.0.0/16" || list.Plugins[0].IPAM.DataDir != "/var/lib/crib/cni" {
		t.Errorf("default conflist = %s", data)
	}
	if _, err := DefaultConfList(Defaults{Subnet: "10.88.0.0"}); err == nil {
		t.Error("a subnet without a prefix length was accepted")
	}
}

func waitReady(t *testing.T, m *Manager, want bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ready, msg := m.Ready()
		if ready == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Ready() = %v (%s), want %v", ready, msg, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestConfDirWatch(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := New(Config{ConfDir: dir, PluginDirs: pluginDirs, CacheDir: t.TempDir(), Defaults: Defaults{
		Name: "crib", Bridge: "crib0", Subnet: "10.88.0.0/16", IPAMDataDir: t.TempDir(),
	}}, discard())
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitReady(t, m, true)
	if _, err := os.Stat(filepath.Join(dir, DefaultConfName)); err != nil {
		t.Fatalf("default config not written: %v", err)
	}

	if err := os.Remove(filepath.Join(dir, DefaultConfName)); err != nil {
		t.Fatal(err)
	}
	waitReady(t, m, false)
	if _, err := m.Setup(ctx, Pod{ID: "x", NetNS: "/nonexistent"}); !errdefs.IsFailedPrecondition(err) {
		t.Errorf("Setup without a configuration = %v, want FailedPrecondition", err)
	}
	// Nothing can have been attached without a configuration: a rollback's
	// teardown has nothing to do.
	if err := m.Teardown(ctx, Pod{ID: "x", NetNS: "/nonexistent"}); err != nil {
		t.Errorf("Teardown without a configuration or attachment = %v", err)
	}

	// A new pod CIDR applies to crib's default network only.
	if err := m.SetPodCIDR("10.99.0.0/16"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, DefaultConfName)); !os.IsNotExist(err) {
		t.Errorf("SetPodCIDR wrote the default network back while none was in use: %v", err)
	}

	conf := `{"cniVersion": "1.0.0", "name": "other", "plugins": [{"type": "loopback"}]}`
	if err := os.WriteFile(filepath.Join(dir, "20-other.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	waitReady(t, m, true)
	if list, _ := m.current(); list == nil || list.Name != "other" {
		t.Errorf("current network = %v, want other", list)
	}
}

func TestSetPodCIDR(t *testing.T) {
	dir := t.TempDir()
	m := New(Config{ConfDir: dir, PluginDirs: pluginDirs, CacheDir: t.TempDir(), Defaults: Defaults{
		Name: "crib", Bridge: "crib0", Subnet: "10.88.0.0/16", IPAMDataDir: t.TempDir(),
	}}, discard())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.SetPodCIDR("10.99.0.0/16"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, DefaultConfName))
	if err != nil || !strings.Contains(string(data), "10.99.0.0/16") {
		t.Errorf("default network after SetPodCIDR: %s (%v)", data, err)
	}
	if err := m.SetPodCIDR("10.99.0.0"); !errdefs.IsInvalidArgument(err) {
		t.Errorf("SetPodCIDR of a bad CIDR = %v, want InvalidArgument", err)
	}
}

// TestSetupTeardown attaches a pinned network namespace to a bridge of
// its own through the real plugins, reaches a listener inside it from the
// host, and detaches it, freeing the IP.
func TestSetupTeardown(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		t.Skip("CNI plugins not installed (Debian: containernetworking-plugins)")
	}
	n := rand.IntN(200) + 20
	bridge := fmt.Sprintf("crnt%d", n)
	subnet := fmt.Sprintf("10.231.%d.0/24", n)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", bridge).Run() })
	ipamDir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := New(Config{ConfDir: t.TempDir(), PluginDirs: pluginDirs, CacheDir: t.TempDir(), Defaults: Defaults{
		Name: "crib-test", Bridge: bridge, Subnet: subnet, IPAMDataDir: ipamDir,
	}}, discard())
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}

	nsDir := filepath.Join(t.TempDir(), "ns")
	paths, err := netns.Pin(netns.Request{Dir: nsDir, Kinds: []netns.Kind{netns.Net}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = netns.Remove(nsDir, nil) })
	pod := Pod{ID: fmt.Sprintf("sandbox-%d", n), NetNS: paths[netns.Net], Name: "p", Namespace: "default", UID: "u"}
	// The DEL without a namespace below releases the address but cannot
	// find the masquerade rules (the bridge plugin finds them through the
	// pod's link): the test removes what it leaves.
	t.Cleanup(func() { testutil.RemoveMasqueradeRules(t, pod.ID) })
	ips, err := m.Setup(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	_, cidr, _ := net.ParseCIDR(subnet)
	if !cidr.Contains(ips[0]) {
		t.Fatalf("pod IP %v not in %s", ips[0], subnet)
	}

	var lis net.Listener
	err = netns.Do(pod.NetNS, func() error {
		var err error
		lis, err = net.Listen("tcp", ":8080")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() {
		if c, err := lis.Accept(); err == nil {
			_, _ = c.Write([]byte("pod"))
			c.Close()
		}
	}()
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(ips[0].String(), "8080"), 5*time.Second)
	if err != nil {
		t.Fatalf("host cannot reach the pod: %v", err)
	}
	got, _ := io.ReadAll(conn)
	conn.Close()
	if string(got) != "pod" {
		t.Errorf("read %q from the pod", got)
	}

	for i := 0; i < 2; i++ {
		if err := m.Teardown(ctx, pod); err != nil {
			t.Fatalf("Teardown #%d: %v", i+1, err)
		}
	}
	if _, err := os.Stat(filepath.Join(ipamDir, "crib-test", ips[0].String())); !os.IsNotExist(err) {
		t.Errorf("IP %v still reserved after Teardown: %v", ips[0], err)
	}

	// A caller that gave up (a kubelet's StopPodSandbox that timed out)
	// does not cut the DEL short: the pod's link and address go all the
	// same.
	ips, err = m.Setup(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	gaveUp, giveUp := context.WithCancel(ctx)
	giveUp()
	if err := m.Teardown(gaveUp, pod); err != nil {
		t.Fatalf("Teardown for a caller that gave up: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ipamDir, "crib-test", ips[0].String())); !os.IsNotExist(err) {
		t.Errorf("IP %v still reserved after a Teardown whose caller gave up: %v", ips[0], err)
	}
	err = netns.Do(pod.NetNS, func() error {
		if _, err := net.InterfaceByName("eth0"); err == nil {
			return fmt.Errorf("the pod's eth0 is still there")
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}

	// Without its namespace (a crash lost it), a pod's address is still
	// released.
	ips, err = m.Setup(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Teardown(ctx, Pod{ID: pod.ID}); err != nil {
		t.Fatalf("Teardown without a namespace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ipamDir, "crib-test", ips[0].String())); !os.IsNotExist(err) {
		t.Errorf("IP %v still reserved after a Teardown without namespace: %v", ips[0], err)
	}
}

func TestWaitOrphans(t *testing.T) {
	// A "plugin" that runs until its stdin closes.
	cmd := exec.Command("sh", "-c", "read x")
	cmd.Env = []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=orphan-test"}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	returned := make(chan struct{})
	go func() { WaitOrphans(context.Background(), "orphan-test"); close(returned) }()
	select {
	case <-returned:
		t.Error("WaitOrphans returned while the plugin ran")
	case <-time.After(300 * time.Millisecond):
	}
	stdin.Close()
	_ = cmd.Wait()
	select {
	case <-returned:
	case <-time.After(30 * time.Second):
		t.Fatal("WaitOrphans still waits after the plugin exited")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	WaitOrphans(ctx, "orphan-test")
	if ctx.Err() != nil {
		t.Error("WaitOrphans waited with no plugin running")
	}
}
