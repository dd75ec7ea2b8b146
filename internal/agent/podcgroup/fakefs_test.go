package podcgroup

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/cgroupfs"
	"github.com/google/go-cmp/cmp"
)

// fakeV2 is a plain directory laid out like a cgroup v2 mount.
func fakeV2(t *testing.T) string {
	fs := t.TempDir()
	touch(t, fs, "cgroup.procs", "cgroup.subtree_control")
	if err := os.WriteFile(filepath.Join(fs, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return fs
}

// fakeV1 is a plain directory laid out like cgroup v1 mounts, with cpu
// and cpuacct co-mounted behind symlinks as Debian does.
func fakeV1(t *testing.T) string {
	fs := t.TempDir()
	touch(t, fs, "cpu,cpuacct/cgroup.procs", "cpu,cpuacct/cpu.shares", "memory/cgroup.procs",
		"memory/memory.limit_in_bytes", "pids/cgroup.procs", "notacgroup/file")
	for _, l := range []string{"cpu", "cpuacct"} {
		if err := os.Symlink("cpu,cpuacct", filepath.Join(fs, l)); err != nil {
			t.Fatal(err)
		}
	}
	return fs
}

// fakeManager is a Manager on a plain directory, whose "cgroups" hold the
// knob files written and so are removed with RemoveAll. It makes slices
// with cgroupfs writes too: systemd_test.go tests the systemd client.
func fakeManager(fs, driver string) *Manager {
	m := newManager(Config{Root: "kubepods", Driver: driver, FS: fs}, nil)
	m.rmdir = os.RemoveAll
	return m
}

func TestFakeV2Systemd(t *testing.T) {
	fs := fakeV2(t)
	m := fakeManager(fs, "systemd")
	if err := m.Setup(); err != nil {
		t.Fatal(err)
	}
	if got := readKnob(t, filepath.Join(fs, "kubepods.slice/kubepods-besteffort.slice/cpu.weight")); got != "1" {
		t.Errorf("besteffort cpu.weight = %q, want 1", got)
	}
	if got := readKnob(t, filepath.Join(fs, "cgroup.subtree_control")); got != "+cpu +cpuset +memory +pids +io" {
		t.Errorf("root cgroup.subtree_control = %q", got)
	}
	tests := []struct {
		uid  string
		res  corev1.ResourceRequirements
		name string
		want map[string]string // knob below the pod's directory -> value
	}{
		{"g-1", guaranteedRes, "kubepods-podg_1.slice", map[string]string{
			"cpu.weight": "39", "cpu.max": "100000 100000", "memory.max": "1073741824",
		}},
		{"b-1", burstableRes, "kubepods-burstable-podb_1.slice", map[string]string{
			"cpu.weight": "4", "cpu.max": "max 100000", "memory.max": "max",
		}},
		{"e-1", bestEffortRes, "kubepods-besteffort-pode_1.slice", map[string]string{
			"cpu.weight": "1", "cpu.max": "max 100000", "memory.max": "max",
		}},
	}
	wantPods := map[string]string{}
	for _, tt := range tests {
		for range 2 { // idempotent
			name, err := m.EnsurePod(pod(tt.uid, tt.res))
			if err != nil {
				t.Fatal(err)
			}
			if name != tt.name {
				t.Errorf("EnsurePod(%s) = %q, want %q", tt.uid, name, tt.name)
			}
		}
		dir, _ := m.names.dir(tt.name)
		for knob, want := range tt.want {
			if got := readKnob(t, filepath.Join(fs, dir, knob)); got != want {
				t.Errorf("%s %s = %q, want %q", tt.uid, knob, got, want)
			}
		}
		wantPods[tt.uid] = tt.name
	}
	got, err := m.Pods()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(wantPods, got); d != "" {
		t.Errorf("Pods() (-want +got):\n%s", d)
	}
	for _, tt := range tests {
		if err := m.RemovePod(tt.uid); err != nil {
			t.Fatal(err)
		}
		if err := m.RemovePod(tt.uid); err != nil {
			t.Fatalf("second RemovePod: %v", err)
		}
		dir, _ := m.names.dir(tt.name)
		if cgroupfs.Exists(filepath.Join(fs, dir)) {
			t.Errorf("%s: %s still there", tt.uid, dir)
		}
	}
	if got, err := m.Pods(); err != nil || len(got) != 0 {
		t.Errorf("Pods() after removal = %v, %v", got, err)
	}
}

func TestFakeV1Cgroupfs(t *testing.T) {
	fs := fakeV1(t)
	m := fakeManager(fs, "cgroupfs")
	if err := m.Setup(); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"cpu,cpuacct", "memory", "pids"} {
		for _, d := range []string{"kubepods/burstable", "kubepods/besteffort"} {
			if !cgroupfs.Exists(filepath.Join(fs, h, d)) {
				t.Errorf("%s/%s not made", h, d)
			}
		}
	}
	if cgroupfs.Exists(filepath.Join(fs, "notacgroup/kubepods")) {
		t.Error("made a cgroup in a directory that is no hierarchy")
	}
	if got := readKnob(t, filepath.Join(fs, "cpu/kubepods/besteffort/cpu.shares")); got != "2" {
		t.Errorf("besteffort cpu.shares = %q, want 2", got)
	}
	p := pod("u-1", res("", "500m,256Mi"))
	name, err := m.EnsurePod(p)
	if err != nil {
		t.Fatal(err)
	}
	if name != "/kubepods/podu-1" {
		t.Fatalf("EnsurePod = %q", name)
	}
	want := map[string]string{
		"cpu/kubepods/podu-1/cpu.shares":               "512",
		"cpu/kubepods/podu-1/cpu.cfs_period_us":        "100000",
		"cpu/kubepods/podu-1/cpu.cfs_quota_us":         "50000",
		"memory/kubepods/podu-1/memory.limit_in_bytes": "268435456",
	}
	for f, w := range want {
		if got := readKnob(t, filepath.Join(fs, f)); got != w {
			t.Errorf("%s = %q, want %q", f, got, w)
		}
	}
	// A resize to Burstable without limits moves the pod and lifts them.
	p.Spec.Containers[0].Resources = res("1,", "")
	name, err = m.EnsurePod(p)
	if err != nil {
		t.Fatal(err)
	}
	if name != "/kubepods/burstable/podu-1" {
		t.Fatalf("EnsurePod after resize = %q", name)
	}
	if cgroupfs.Exists(filepath.Join(fs, "cpu/kubepods/podu-1")) {
		t.Error("the pod's empty Guaranteed cgroup was left behind")
	}
	want = map[string]string{
		"cpu/kubepods/burstable/podu-1/cpu.shares":               "1024",
		"cpu/kubepods/burstable/podu-1/cpu.cfs_quota_us":         "-1",
		"memory/kubepods/burstable/podu-1/memory.limit_in_bytes": "-1",
	}
	for f, w := range want {
		if got := readKnob(t, filepath.Join(fs, f)); got != w {
			t.Errorf("%s = %q, want %q", f, got, w)
		}
	}
}

func TestNoHierarchy(t *testing.T) {
	m := New(Config{FS: t.TempDir()}, nil)
	if err := m.Setup(); err == nil {
		t.Error("Setup on a directory without cgroups succeeded")
	}
}

func TestUpdateQOS(t *testing.T) {
	tests := []struct {
		name   string
		fs     func(*testing.T) string
		driver string
		knob   string // of the Burstable cgroup
		pods   []*corev1.Pod
		want   string
	}{
		{"v1 no pods", fakeV1, "cgroupfs", "cpu/kubepods/burstable/cpu.shares", nil, "2"},
		{"v1 sums burstable requests only", fakeV1, "cgroupfs", "cpu/kubepods/burstable/cpu.shares",
			[]*corev1.Pod{pod("a", burstableRes), pod("b", res("1,", "")), pod("c", guaranteedRes), pod("d", bestEffortRes)}, "1126"},
		{"v2 weight", fakeV2, "systemd", "kubepods.slice/kubepods-burstable.slice/cpu.weight",
			[]*corev1.Pod{pod("b", res("2,", ""))}, "79"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := tt.fs(t)
			m := fakeManager(fs, tt.driver)
			if err := m.UpdateQOS(tt.pods); err != nil {
				t.Fatal(err)
			}
			if got := readKnob(t, filepath.Join(fs, tt.knob)); got != tt.want {
				t.Errorf("%s = %s, want %s", tt.knob, got, tt.want)
			}
		})
	}
}
