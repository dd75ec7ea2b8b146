package ocispec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestRuncAcceptsSpec runs a generated spec with the real runc and a static
// busybox, to prove runc accepts what Build produces (seccomp profile,
// mounts, devices, user, capabilities). It skips without root, runc or a
// static busybox.
func TestRuncAcceptsSpec(t *testing.T) {
	requireRoot(t)
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Skip("runc not installed")
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("busybox not installed")
	}
	if out, _ := exec.Command("file", "-L", busybox).Output(); len(out) > 0 && !bytes.Contains(out, []byte("statically linked")) {
		t.Skip("busybox is not static")
	}
	host, err := ReadHostCaps()
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	bin := filepath.Join(f.rootfs, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(busybox)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "busybox"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"proc", "sys", "dev", "tmp", "data"} {
		if err := os.MkdirAll(filepath.Join(f.rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, f.host, "data/hello", "from the host\n")
	hostname := writeFile(t, f.host, "hostname", "runc-test\n")
	shm := f.hostDir(t, "shm")

	cases := []struct {
		name   string
		modify func(in *Input)
		want   []string
	}{
		{
			name: "unprivileged app user",
			modify: func(in *Input) {
				in.Container.Command = []string{"/bin/busybox", "sh", "-c",
					`id; pwd; echo "host=$(busybox hostname) env=$IMAGE_ENV,$FOO"; cat /data/hello; ` +
						`busybox touch /data/x 2>/dev/null && echo data-rw || echo data-ro; ` +
						`busybox mount -t tmpfs none /tmp 2>/dev/null && echo mount-ok || echo mount-denied; ` +
						`grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status | busybox tr -s '\t' ' '`}
				in.Container.WorkingDir = "/tmp"
				in.Container.Linux.SecurityContext.RunAsUsername = "app"
				in.Container.Linux.SecurityContext.NoNewPrivs = true
			},
			want: []string{
				"uid=1000(app) gid=1000(app) groups=10(wheel),29(audio),50(staff),1000(app)",
				"/tmp\n",
				"host=web-0 env=1,bar",
				"from the host",
				"data-ro",
				"mount-denied",
				"Seccomp: 2",
				"NoNewPrivs: 1",
			},
		},
		{
			name: "privileged on host namespaces",
			modify: func(in *Input) {
				in.Namespaces = Namespaces{HostNetwork: true, HostIPC: true, HostPID: true}
				in.Container.Linux.SecurityContext.Privileged = true
				in.Container.Command = []string{"/bin/busybox", "sh", "-c",
					`grep -E '^(CapEff|Seccomp):' /proc/self/status | busybox tr -s '\t' ' '; ` +
						`test -c /dev/null && echo has-null; test -e /proc/1/cmdline && busybox cat /proc/1/comm; ` +
						`busybox mount -t tmpfs none /tmp && echo mount-ok`}
			},
			want: []string{fmt.Sprintf("CapEff: %016x", host.Mask), "Seccomp: 0", "has-null", "mount-ok"},
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("crib-ocispec-test-%d-%d", os.Getpid(), i)
			in := f.input()
			in.ID = id
			in.HostCaps = host
			in.Namespaces = Namespaces{}
			in.Files = SandboxFiles{HostnamePath: hostname, ShmPath: shm}
			in.CgroupsPath = "/crib-ocispec-test/" + id
			in.Image.Env = []string{"IMAGE_ENV=1"}
			in.Container.Args = nil
			in.Container.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: filepath.Join(f.host, "data"), Readonly: true}}
			in.Container.Linux.Resources.MemoryLimitInBytes = 64 << 20
			// What the kubelet sends on a node with hugepages.
			in.Container.Linux.Resources.HugepageLimits = []*runtimeapi.HugepageLimit{{PageSize: "2MB"}, {PageSize: "1GB"}}
			in.Hugetlb = hugetlbMounted()
			tc.modify(&in)
			runSpec(t, runc, f.base, id, in, tc.want)
		})
	}
}

// runSpec builds in, runs it with runc to completion and checks that the
// output holds every want string. It removes the container and its cgroups.
func runSpec(t *testing.T, runc, base, id string, in Input, want []string) {
	t.Helper()
	spec, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(base, "bundle-"+id)
	if err := os.MkdirAll(bundle, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(base, "runc-state")
	t.Cleanup(func() {
		_ = exec.Command(runc, "--root", state, "delete", "--force", id).Run()
		parents, _ := filepath.Glob("/sys/fs/cgroup/*/crib-ocispec-test")
		for _, p := range parents {
			_ = os.Remove(p)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, runc, "--root", state, "run", "--bundle", bundle, id)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("runc run: %v\n%s", err, out)
	}
	got := string(out)
	t.Logf("container output:\n%s", got)
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("container output lacks %q:\n%s", w, got)
		}
	}
}

// hugetlbMounted reports whether a cgroup v1 hugetlb hierarchy or cgroup v2
// is mounted at the usual place.
func hugetlbMounted() bool {
	if _, err := os.Stat("/sys/fs/cgroup/hugetlb"); err == nil {
		return true
	}
	data, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
	return err == nil && strings.Contains(string(data), "hugetlb")
}
