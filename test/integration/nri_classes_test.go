package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/nri/pkg/api"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/resclass"
	"github.com/crib-dev/crib/internal/testutil"
)

// nriClasser adjusts containers by their labels: nri-blockio names a block
// I/O class, nri-rdt an RDT class, nri-clos an RDT CLOS, and nri-seccomp
// gives a seccomp policy
// that lets everything but mkdir through, which fails with EPERM.
type nriClasser struct{}

func (nriClasser) CreateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	a := &api.ContainerAdjustment{}
	l := c.GetLabels()
	if class := l["nri-blockio"]; class != "" {
		a.SetLinuxBlockIOClass(class)
	}
	if class := l["nri-rdt"]; class != "" {
		a.SetLinuxRDTClass(class)
	}
	if clos := l["nri-clos"]; clos != "" {
		a.SetLinuxRDTClosID(clos)
	}
	if l["nri-seccomp"] != "" {
		a.SetLinuxSeccompPolicy(&api.LinuxSeccomp{
			DefaultAction: "SCMP_ACT_ALLOW",
			Syscalls: []*api.LinuxSyscall{{
				Names:    []string{"mkdir", "mkdirat"},
				Action:   "SCMP_ACT_ERRNO",
				ErrnoRet: &api.OptionalUInt32{Value: 1}, // EPERM
			}},
		})
	}
	return a, nil, nil
}

// blockDevice is a whole block device of this host with its node in /dev,
// and its major:minor; a disk before a loop device.
func blockDevice(t *testing.T) (node, majMin string) {
	entries, _ := os.ReadDir("/sys/block")
	slices.SortStableFunc(entries, func(a, b os.DirEntry) int {
		return boolInt(strings.HasPrefix(a.Name(), "loop")) - boolInt(strings.HasPrefix(b.Name(), "loop"))
	})
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "zram") || strings.HasPrefix(name, "ram") {
			continue
		}
		dev, err := os.ReadFile(filepath.Join("/sys/block", name, "dev"))
		fi, serr := os.Stat("/dev/" + name)
		if err != nil || serr != nil || fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0 {
			continue
		}
		return "/dev/" + name, strings.TrimSpace(string(dev))
	}
	t.Skip("no block device under /sys/block with a node in /dev")
	return "", ""
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Block I/O and RDT classes, and a seccomp policy, asked for by a plugin
// written on NRI's stub, against a real daemon: the block I/O class of the
// blockio_config_file is the container's throttling in its OCI spec and in
// its cgroup, and so is the class a pod annotation names without a plugin;
// a class the file does not have, an RDT class on a node without an
// rdt_config_file, and a CLOS on a host without resctrl fail the creation
// with InvalidArgument naming what is missing and leave no container; the
// plugin's seccomp policy is in force, so the process's mkdir fails with
// EPERM while the rest runs, and NRI's default validator, told to, refuses
// it over a RuntimeDefault profile.
func TestNRIClassesAndSeccomp(t *testing.T) {
	testutil.RequiresRoot(t)
	t.Parallel()
	img := testutil.Busybox(t)
	node, majMin := blockDevice(t)
	dir := t.TempDir()
	classes := filepath.Join(dir, "blockio.yaml")
	// Throttles only: a weight needs blkio.weight or BFQ's weight file,
	// which not every host's blkio controller has.
	if err := os.WriteFile(classes, fmt.Appendf(nil, `Classes:
  slowread:
    - Devices:
        - %s
      ThrottleReadBps: "1048576"
      ThrottleWriteIOPS: "100"
`, node), 0o644); err != nil {
		t.Fatal(err)
	}
	d := testutil.StartDaemon(t, testutil.Options{Image: &img, ExtraConfig: fmt.Sprintf("blockio_config_file = %q\n", classes) +
		"[nri.default_validator]\nenable = true\nreject_runtime_default_seccomp_adjustment = true\n"})
	e := &env{t: t, d: d, img: img}
	startPlugin(t, d, nriClasser{}, "20", "classer")

	pod := e.podConfig("nri-classes")
	podID := e.runPod(pod)
	cfg := e.ctrConfig("slow", "sleep", "3600")
	cfg.Labels["nri-blockio"] = "slowread"
	id := e.run(podID, pod, cfg)

	// The spec runc got, and the container's cgroup.
	throttled := func(id string) {
		t.Helper()
		spec := bundleSpec(t, d, id)
		b := spec.Linux.Resources.BlockIO
		if b == nil || len(b.ThrottleReadBpsDevice) != 1 || b.ThrottleReadBpsDevice[0].Rate != 1048576 ||
			fmt.Sprintf("%d:%d", b.ThrottleReadBpsDevice[0].Major, b.ThrottleReadBpsDevice[0].Minor) != majMin ||
			len(b.ThrottleWriteIOPSDevice) != 1 || b.ThrottleWriteIOPSDevice[0].Rate != 100 {
			t.Errorf("spec block I/O of %s: %+v, want %s read 1048576 B/s and 100 write IOPS", id, b, majMin)
			return
		}
		if strings.Contains(spec.Linux.CgroupsPath, ":") {
			return // a systemd unit: the cgroup is systemd's to place
		}
		if testutil.Unified() {
			data, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", spec.Linux.CgroupsPath, "io.max"))
			if got := string(data); err != nil || !strings.Contains(got, majMin+" rbps=1048576 wbps=max riops=max wiops=100") {
				t.Errorf("io.max of %s: %q, %v", id, got, err)
			}
			return
		}
		for file, want := range map[string]string{"blkio.throttle.read_bps_device": majMin + " 1048576", "blkio.throttle.write_iops_device": majMin + " 100"} {
			data, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/blkio", spec.Linux.CgroupsPath, file))
			if got := strings.TrimSpace(string(data)); err != nil || got != want {
				t.Errorf("%s of %s: %q, %v; want %q", file, id, got, err, want)
			}
		}
	}
	throttled(id)

	// The pod annotation containerd honours names the class without a plugin.
	annotated := e.podConfig("nri-classes-annotated")
	annotated.Annotations = map[string]string{"blockio.resources.beta.kubernetes.io/pod": "slowread"}
	annotatedID := e.runPod(annotated)
	throttled(e.run(annotatedID, annotated, e.ctrConfig("annotated", "sleep", "3600")))

	// What the node cannot give.
	before := listContainers(t, e)
	for i, c := range []struct {
		label, class string
		pod          map[string]string
		want         []string
	}{
		{label: "nri-blockio", class: "fast", want: []string{`block I/O class "fast" is not in blockio_config_file`, "slowread"}},
		{label: "nri-rdt", class: "gold", want: []string{`RDT class "gold"`, "no rdt_config_file is configured"}},
		{pod: map[string]string{"rdt.resources.beta.kubernetes.io/pod": "gold"}, want: []string{"RDT class annotation", "no rdt_config_file is configured"}},
		{pod: map[string]string{"blockio.resources.beta.kubernetes.io/pod": "fast"}, want: []string{"block I/O class annotation", `"fast" is not in blockio_config_file`}},
	} {
		p := pod
		if c.pod != nil {
			p = e.podConfig(fmt.Sprintf("nri-classes-refused-%d", i))
			p.Annotations = c.pod
			podID := e.runPod(p)
			_, err := e.rt().CreateContainer(e.ctx(), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: e.ctrConfig("refused", "true"), SandboxConfig: p})
			checkRefused(t, err, c.want)
			continue
		}
		cc := e.ctrConfig("refused-"+c.class, "true")
		cc.Labels[c.label] = c.class
		_, err := e.rt().CreateContainer(e.ctx(), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cc, SandboxConfig: p})
		checkRefused(t, err, c.want)
	}
	// NRI's default validator judges a seccomp policy by the profile the
	// kubelet asked for: over RuntimeDefault, this daemon's refuses it.
	rd := e.ctrConfig("seccomp-over-default", "true")
	rd.Labels["nri-seccomp"] = "yes"
	rd.Linux.SecurityContext.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	_, err := e.rt().CreateContainer(e.ctx(), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: rd, SandboxConfig: pod})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "runtime default seccomp policy adjustment") {
		t.Errorf("a seccomp policy over RuntimeDefault: %v, want the default validator's FailedPrecondition", err)
	}
	if after := listContainers(t, e); len(after) != len(before) {
		t.Errorf("containers %v after the refused creations, want %v", after, before)
	}

	// An RDT class with an rdt_config_file on a host with resctrl is not
	// tried here: it would reconfigure the host's resctrl. Without resctrl,
	// a plugin's CLOS is refused at creation, not by runc at start.
	if resclass.ResctrlMounted() {
		t.Log("resctrl is mounted; the RDT class path with a configuration is not exercised")
	} else {
		cc := e.ctrConfig("refused-clos", "true")
		cc.Labels["nri-clos"] = "gold"
		_, err := e.rt().CreateContainer(e.ctx(), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cc, SandboxConfig: pod})
		checkRefused(t, err, []string{"RDT (Linux.IntelRdt): resctrl is not mounted"})
		if after := listContainers(t, e); len(after) != len(before) {
			t.Errorf("containers %v after the refused CLOS, want %v", after, before)
		}
	}

	// The plugin's seccomp policy.
	sc := e.ctrConfig("seccomp", "sleep", "3600")
	sc.Labels["nri-seccomp"] = "yes"
	scID := e.run(podID, pod, sc)
	spec := bundleSpec(t, d, scID)
	if s := spec.Linux.Seccomp; s == nil || s.DefaultAction != "SCMP_ACT_ALLOW" || len(s.Syscalls) != 1 || !slices.Contains(s.Syscalls[0].Names, "mkdir") {
		t.Errorf("spec seccomp: %+v, want the plugin's policy", spec.Linux.Seccomp)
	}
	if r := e.exec(scID, "mkdir", "/tmp/denied"); r.ExitCode == 0 || !strings.Contains(string(r.Stderr), "Operation not permitted") {
		t.Errorf("mkdir under the plugin's policy: exit %d, %q; want EPERM", r.ExitCode, r.Stderr)
	}
	if r := e.exec(scID, "touch", "/tmp/allowed"); r.ExitCode != 0 {
		t.Errorf("touch under the plugin's policy: exit %d, %q; want it allowed", r.ExitCode, r.Stderr)
	}
	if r := e.exec(id, "mkdir", "/tmp/fine"); r.ExitCode != 0 {
		t.Errorf("mkdir in a container without the policy: exit %d, %q", r.ExitCode, r.Stderr)
	}
}

func checkRefused(t *testing.T, err error, want []string) {
	t.Helper()
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("CreateContainer: %v, want InvalidArgument", err)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("CreateContainer: %v, want it to say %q", err, w)
		}
	}
}
