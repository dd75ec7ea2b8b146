package testutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Timeouts of the harness. They bound waits for the daemon; they are not
// performance assertions.
const (
	readyTimeout = 30 * time.Second
	stopTimeout  = 20 * time.Second
	rpcTimeout   = 60 * time.Second
)

// Options configures a test daemon.
type Options struct {
	// Image, when set, is made available before StartDaemon returns: its
	// tarball is loaded into the root before the first start, or its
	// mirrors are configured and it is pulled over the CRI.
	Image *TestImage
	// Registries are extra registry mirrors, host -> endpoints.
	Registries map[string][]string
	// LogLevel is the daemon's log level; empty means debug.
	LogLevel string
	// CNIConfList, when set, is the daemon's CNI network configuration
	// instead of crib's default; "{{.Bridge}}", "{{.Subnet}}" and
	// "{{.DataDir}}" in it are replaced by the daemon's own.
	CNIConfList string
	// ExtraConfig is TOML merged over the daemon's configuration, as a
	// drop-in (90-test.toml in the config's drop-in directory): top-level
	// keys and tables alike.
	ExtraConfig string
	// Env are extra NAME=VALUE variables of the daemon's environment.
	Env []string
}

// Daemon is a `crib daemon` child process with its own directories, all
// under Dir, and CRI clients connected to its socket. Runtime and Images
// are replaced on Restart.
type Daemon struct {
	// Dir holds everything of this daemon: the binary it runs, its config,
	// log, root, state and the pods' log directories.
	Dir    string
	Root   string
	State  string
	Socket string
	// LogDir is where tests put pods' log directories.
	LogDir string
	// Config is the daemon's TOML configuration file; Log its stderr.
	Config string
	Log    string
	// Binary is the crib binary this daemon runs: a link to BuildCrib's,
	// so that every process it starts can be told apart by its executable;
	// its monitors run MonitorBinary(Binary), linked the same way.
	Binary string
	// NRISocket is where NRI plugins connect to this daemon; its
	// pre-installed plugins and their configuration are under Dir/nri.
	NRISocket string
	// CgroupParent is the cgroup pods of this daemon go under.
	CgroupParent string
	// Bridge and Subnet are the daemon's own default CNI network; its
	// conf dir is under Dir.
	Bridge, Subnet string

	Runtime runtimeapi.RuntimeServiceClient
	Images  runtimeapi.ImageServiceClient

	network *testNetwork
	env     []string

	conn    *grpc.ClientConn
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	started bool
}

// StartDaemon starts a crib daemon in fresh temporary directories and
// returns once it answers on its socket. At t.Cleanup every pod is removed,
// the daemon is stopped and the leak check runs.
func StartDaemon(t testing.TB, opts Options) *Daemon {
	t.Helper()
	RequiresRoot(t)
	crib := BuildCrib(t)
	// Unix socket paths are limited to 108 bytes: t.TempDir() is too long.
	dir, err := os.MkdirTemp("/tmp", "crib-it-")
	if err != nil {
		t.Fatal(err)
	}
	// The root of a pod in its own user namespace reaches its rootfs and
	// the pod's files through here, as through /var/lib on a node.
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	d := &Daemon{
		Dir:          dir,
		Root:         filepath.Join(dir, "root"),
		State:        filepath.Join(dir, "state"),
		Socket:       filepath.Join(dir, "state", "crib.sock"),
		LogDir:       filepath.Join(dir, "logs"),
		Config:       filepath.Join(dir, "crib.toml"),
		Log:          filepath.Join(dir, "daemon.log"),
		Binary:       filepath.Join(dir, "crib"),
		NRISocket:    filepath.Join(dir, "nri.sock"),
		CgroupParent: testCgroupParent(dir),
		env:          opts.Env,
	}
	t.Cleanup(func() { d.cleanup(t) })
	if d.network, err = reserveNetwork(dir); err != nil {
		t.Fatal(err)
	}
	d.Bridge, d.Subnet = d.network.Bridge, d.network.Subnet

	if err := LinkCrib(crib, d.Binary); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(d.LogDir, 0o755); err != nil {
		t.Fatal(err)
	}
	registries := map[string][]string{}
	for host, m := range opts.Registries {
		registries[host] = m
	}
	if opts.Image != nil {
		for host, m := range opts.Image.Mirrors {
			registries[host] = m
		}
	}
	level := opts.LogLevel
	if level == "" {
		level = "debug"
	}
	if err := os.WriteFile(d.Config, d.configTOML(level, registries), 0o644); err != nil {
		t.Fatal(err)
	}
	if opts.ExtraConfig != "" {
		// config.DropInDir's naming; config's own tests use this package.
		WriteTree(t, strings.TrimSuffix(d.Config, ".toml")+".d", map[string]string{"90-test.toml": opts.ExtraConfig})
	}
	if opts.CNIConfList != "" {
		conf := strings.NewReplacer("{{.Bridge}}", d.Bridge, "{{.Subnet}}", d.Subnet,
			"{{.DataDir}}", filepath.Join(d.Root, "cni", "networks")).Replace(opts.CNIConfList)
		if err := os.MkdirAll(filepath.Join(d.Dir, "cni"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d.Dir, "cni", "10-test.conflist"), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if opts.Image != nil && opts.Image.Tarball != "" {
		d.loadImage(t, opts.Image.Tarball)
	}
	if err := d.start(); err != nil {
		t.Fatal(err)
	}
	if opts.Image != nil && opts.Image.Tarball == "" {
		ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
		defer cancel()
		_, err := d.Images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: opts.Image.Ref}})
		if err != nil {
			t.Fatalf("pull %s: %v", opts.Image.Ref, err)
		}
	}
	return d
}

// testCgroupParent is the cgroup parent of a test daemon in dir: a cgroup
// named after dir, or under the systemd driver a slice (without dashes,
// which would nest it in other slices).
func testCgroupParent(dir string) string {
	if CgroupDriver() == "systemd" {
		return strings.ReplaceAll(filepath.Base(dir), "-", "") + ".slice"
	}
	return "/" + filepath.Base(dir)
}

// cgroupDriverOf is the driver a test daemon's cgroup parent was made for.
func cgroupDriverOf(parent string) string {
	if strings.HasSuffix(parent, ".slice") {
		return "systemd"
	}
	return "cgroupfs"
}

func (d *Daemon) configTOML(level string, registries map[string][]string) []byte {
	var b strings.Builder
	handler, _ := DefaultRuntime()
	fmt.Fprintf(&b, "default_runtime = %s\n", strconv.Quote(handler))
	fmt.Fprintf(&b, "root = %s\nstate = %s\nsocket = %s\nlog_level = %s\ncgroup_driver = %s\ncgroup_parent = %s\n",
		strconv.Quote(d.Root), strconv.Quote(d.State), strconv.Quote(d.Socket), strconv.Quote(level),
		strconv.Quote(cgroupDriverOf(d.CgroupParent)), strconv.Quote(d.CgroupParent))
	fmt.Fprintf(&b, "\n[network]\nconf_dir = %s\nname = %s\nbridge = %s\nsubnet = %s\n",
		strconv.Quote(filepath.Join(d.Dir, "cni")), strconv.Quote(d.Bridge), strconv.Quote(d.Bridge), strconv.Quote(d.Subnet))
	// The daemon's own NRI socket and plugin dirs, never the host's.
	fmt.Fprintf(&b, "\n[nri]\nsocket_path = %s\nplugin_path = %s\nplugin_config_path = %s\n",
		strconv.Quote(d.NRISocket), strconv.Quote(filepath.Join(d.Dir, "nri", "plugins")), strconv.Quote(filepath.Join(d.Dir, "nri", "conf.d")))
	hosts := make([]string, 0, len(registries))
	for h := range registries {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		quoted := make([]string, len(registries[h]))
		for i, m := range registries[h] {
			quoted[i] = strconv.Quote(m)
		}
		fmt.Fprintf(&b, "\n[registries.%s]\nmirrors = [%s]\n", strconv.Quote(h), strings.Join(quoted, ", "))
	}
	if handler, bin := DefaultRuntime(); handler != "runc" {
		fmt.Fprintf(&b, "\n[runtimes.%s]\npath = %s\n", strconv.Quote(handler), strconv.Quote(bin))
	}
	return []byte(b.String())
}

func (d *Daemon) loadImage(t testing.TB, tarball string) {
	t.Helper()
	cmd := exec.Command(d.Binary, "image", "load", "--config", d.Config, tarball)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("crib image load %s: %v\n%s", tarball, err, out)
	}
}

// start runs the daemon and waits until it answers Version.
func (d *Daemon) start() error {
	logf, err := os.OpenFile(d.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open daemon log: %w", err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== testutil: starting crib daemon at %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(d.Binary, "daemon", "--config", d.Config)
	cmd.Env = append(os.Environ(), d.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start crib daemon: %w", err)
	}
	d.cmd, d.done, d.waitErr, d.started = cmd, make(chan struct{}), nil, true
	go func(done chan struct{}) {
		d.waitErr = cmd.Wait()
		close(done)
	}(d.done)
	if err := d.waitReady(); err != nil {
		_ = cmd.Process.Kill()
		<-d.done
		return fmt.Errorf("%w\ndaemon log:\n%s", err, d.ReadLog())
	}
	return nil
}

func (d *Daemon) waitReady() error {
	deadline := time.Now().Add(readyTimeout)
	for ; time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-d.done:
			return fmt.Errorf("crib daemon exited during start: %v", d.waitErr)
		default:
		}
		c, err := net.DialTimeout("unix", d.Socket, time.Second)
		if err != nil {
			continue
		}
		c.Close()
		if d.conn == nil {
			conn, err := grpc.NewClient("unix://"+d.Socket,
				grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(32<<20)))
			if err != nil {
				return fmt.Errorf("connect to %s: %w", d.Socket, err)
			}
			d.conn = conn
			d.Runtime = runtimeapi.NewRuntimeServiceClient(conn)
			d.Images = runtimeapi.NewImageServiceClient(conn)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err = d.Runtime.Version(ctx, &runtimeapi.VersionRequest{})
		cancel()
		if err == nil {
			return nil
		}
	}
	return fmt.Errorf("crib daemon did not answer on %s within %s", d.Socket, readyTimeout)
}

// Running reports whether the daemon process is alive.
func (d *Daemon) Running() bool {
	if d.done == nil {
		return false
	}
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

// Pid is the daemon's process id, or 0 when it is not running.
func (d *Daemon) Pid() int {
	if !d.Running() {
		return 0
	}
	return d.cmd.Process.Pid
}

// ReadLog returns what the daemon logged so far, across restarts.
func (d *Daemon) ReadLog() string {
	b, err := os.ReadFile(d.Log)
	if err != nil {
		return fmt.Sprintf("(read daemon log: %v)", err)
	}
	return string(b)
}

// Stop sends SIGTERM and waits for a clean exit.
func (d *Daemon) Stop(t testing.TB) {
	t.Helper()
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
}

// Kill9 kills the daemon with SIGKILL; its containers and monitors keep
// running.
func (d *Daemon) Kill9(t testing.TB) {
	t.Helper()
	if !d.Running() {
		t.Fatal("Kill9: crib daemon is not running")
	}
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
	d.disconnect()
}

// Restart stops the daemon if it runs (SIGTERM) and starts it again on the
// same directories.
func (d *Daemon) Restart(t testing.TB) {
	t.Helper()
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	if err := d.start(); err != nil {
		t.Fatal(err)
	}
}

func (d *Daemon) stop() error {
	if !d.Running() {
		d.disconnect()
		return nil
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(stopTimeout):
		_ = d.cmd.Process.Signal(syscall.SIGKILL)
		<-d.done
		d.disconnect()
		return fmt.Errorf("crib daemon did not exit within %s of SIGTERM", stopTimeout)
	}
	d.disconnect()
	if d.waitErr != nil {
		return fmt.Errorf("crib daemon exited after SIGTERM: %w", d.waitErr)
	}
	return nil
}

func (d *Daemon) disconnect() {
	if d.conn != nil {
		d.conn.Close()
	}
	d.conn, d.Runtime, d.Images = nil, nil, nil
}

// LinkOrCopy makes dst the same file as src: a hard link, or a copy when
// they are on different file systems, which it returns once it can be
// executed.
func LinkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return waitExecutable(dst)
}

// waitExecutable runs `bin version` until the kernel lets it: a binary
// just copied cannot be executed ("text file busy") while a process forked
// meanwhile by another test still holds the copy's write descriptor, until
// that process execs (Go issue 22315; slow under emulation). Once one exec
// succeeded, no descriptor is left to hold it.
func waitExecutable(bin string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Only whether it starts counts: crib-monitor has no version.
		err := exec.Command(bin, "version").Run()
		var exited *exec.ExitError
		if !errors.Is(err, syscall.ETXTBSY) {
			if err != nil && !errors.As(err, &exited) {
				return fmt.Errorf("run %s version: %w", bin, err)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("run %s version: still %w after 30s", bin, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// LoadImage loads an image tarball with `crib image load`: through the
// daemon when it runs, into its root otherwise.
func (d *Daemon) LoadImage(t testing.TB, tarball string) {
	t.Helper()
	d.loadImage(t, tarball)
}
