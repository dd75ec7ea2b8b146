package podcgroup

import (
	"errors"
	"path"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/podconfig"
)

// The three QoS classes' pods.
var (
	guaranteedRes = res("", "1,1Gi")
	burstableRes  = res("100m,64Mi", "")
	bestEffortRes = res("", "")
)

func TestNamesMatchPodconfig(t *testing.T) {
	tests := []struct {
		root, driver, parent string
	}{
		{"kubepods", "cgroupfs", "/kubepods"},
		{"/kubepods", "", "/kubepods"},
		{"crib/pods/", "cgroupfs", "/crib/pods"},
		{"kubepods", "systemd", "kubepods.slice"},
		{"kubepods.slice", "systemd", "kubepods.slice"},
		{"crib-pods.slice", "systemd", "crib-pods.slice"},
	}
	for _, tt := range tests {
		m := New(Config{Root: tt.root, Driver: tt.driver}, nil)
		if got := m.CgroupParent(); got != tt.parent {
			t.Errorf("%s %q: CgroupParent() = %q, want %q", tt.driver, tt.root, got, tt.parent)
		}
		for _, r := range []corev1.ResourceRequirements{guaranteedRes, burstableRes, bestEffortRes} {
			p := pod("0123-abcd-ef", r)
			cfg, err := podconfig.SandboxConfig(p, 0, nil, podconfig.Options{CgroupParent: m.CgroupParent()})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := m.PodCgroup(p), cfg.GetLinux().GetCgroupParent(); got != want {
				t.Errorf("%s %q %s: PodCgroup = %q, podconfig says %q", tt.driver, tt.root, podconfig.QOSClass(p), got, want)
			}
		}
	}
}

func TestNaming(t *testing.T) {
	type names struct {
		Pod, Dir string
		Levels   []string
	}
	tests := []struct {
		driver, root string
		qos          corev1.PodQOSClass
		want         names
	}{
		{"cgroupfs", "kubepods", corev1.PodQOSGuaranteed, names{
			"/kubepods/pod1-2", "/kubepods/pod1-2", []string{"/kubepods", "/kubepods/pod1-2"}}},
		{"cgroupfs", "kubepods", corev1.PodQOSBurstable, names{
			"/kubepods/burstable/pod1-2", "/kubepods/burstable/pod1-2",
			[]string{"/kubepods", "/kubepods/burstable", "/kubepods/burstable/pod1-2"}}},
		{"systemd", "kubepods", corev1.PodQOSGuaranteed, names{
			"kubepods-pod1_2.slice", "/kubepods.slice/kubepods-pod1_2.slice",
			[]string{"/kubepods.slice", "/kubepods.slice/kubepods-pod1_2.slice"}}},
		{"systemd", "kubepods", corev1.PodQOSBestEffort, names{
			"kubepods-besteffort-pod1_2.slice", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1_2.slice",
			[]string{"/kubepods.slice", "/kubepods.slice/kubepods-besteffort.slice", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1_2.slice"}}},
	}
	for _, tt := range tests {
		n, err := newNaming(tt.root, tt.driver)
		if err != nil {
			t.Fatal(err)
		}
		var got names
		got.Pod = n.podName(tt.qos, "1-2")
		if got.Dir, err = n.dir(got.Pod); err != nil {
			t.Fatal(err)
		}
		if got.Levels, err = n.levels(got.Pod); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s %s (-want +got):\n%s", tt.driver, tt.qos, d)
		}
		entry := path.Base(got.Dir)
		if uid, ok := n.uidOf(tt.qos, entry); !ok || uid != "1-2" {
			t.Errorf("%s %s: uidOf(%q) = %q, %v", tt.driver, tt.qos, entry, uid, ok)
		}
	}
}

func TestUIDOfRejects(t *testing.T) {
	fs, _ := newNaming("kubepods", "cgroupfs")
	sd, _ := newNaming("kubepods", "systemd")
	tests := []struct {
		n     naming
		qos   corev1.PodQOSClass
		entry string
	}{
		{fs, corev1.PodQOSGuaranteed, "burstable"},
		{fs, corev1.PodQOSGuaranteed, "pod"},
		{fs, corev1.PodQOSBurstable, "abc"},
		{sd, corev1.PodQOSGuaranteed, "kubepods-burstable.slice"},
		{sd, corev1.PodQOSBurstable, "kubepods-burstable-pod.slice"},
		{sd, corev1.PodQOSBurstable, "kubepods-burstable-podx.scope"},
		{sd, corev1.PodQOSBestEffort, "kubepods-burstable-podx.slice"},
	}
	for _, tt := range tests {
		if uid, ok := tt.n.uidOf(tt.qos, tt.entry); ok {
			t.Errorf("uidOf(%s, %q) = %q, want no pod", tt.qos, tt.entry, uid)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []Config{
		{Root: "/", Driver: "cgroupfs"},
		{Root: "kubepods", Driver: "none"},
		{Root: "a/b.slice", Driver: "systemd"},
		{Root: "-bad", Driver: "systemd"},
	}
	for _, cfg := range tests {
		m := New(cfg, nil)
		if err := m.Setup(); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%+v: Setup() = %v, want invalid argument", cfg, err)
		}
		if _, err := m.EnsurePod(pod("u")); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%+v: EnsurePod() = %v, want invalid argument", cfg, err)
		}
		if err := m.RemovePod("u"); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%+v: RemovePod() = %v, want invalid argument", cfg, err)
		}
		if _, err := m.Pods(); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%+v: Pods() = %v, want invalid argument", cfg, err)
		}
	}
	m := New(Config{FS: t.TempDir()}, nil)
	for _, uid := range []string{"", "..", "a/b"} {
		if err := m.RemovePod(uid); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("RemovePod(%q) = %v, want invalid argument", uid, err)
		}
		if _, err := m.EnsurePod(pod(uid)); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("EnsurePod(uid %q) = %v, want invalid argument", uid, err)
		}
	}
}
