package podcgroup

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/crib-dev/crib/internal/cgroupfs"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// realManager is a Manager on the host's cgroups under a test root of its
// own, removed from every hierarchy when the test ends. With the systemd
// driver it makes the slices' directories with cgroupfs writes.
func realManager(t *testing.T, driver string) (*Manager, cgroupfs.Hierarchies) {
	t.Helper()
	needRoot(t)
	h, err := cgroupfs.Find(DefaultFS)
	if err != nil {
		t.Skipf("no cgroups: %v", err)
	}
	if h.Unified {
		t.Skip("the real-cgroup test is written for cgroup v1 cgroupfs.Hierarchies")
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	root := "crib-podcg-test-" + hex.EncodeToString(b)
	if driver == "systemd" {
		root = "cribpodcgtest" + hex.EncodeToString(b) // a dash would nest it in more slices
	}
	m := newManager(Config{Root: root, Driver: driver}, nil)
	top, err := m.names.dir(m.CgroupParent())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, r := range h.Roots {
			removeAllCgroups(t, filepath.Join(r, top))
		}
	})
	return m, h
}

// dir is the named cgroup's path below a hierarchy's root.
func dir(t *testing.T, m *Manager, name string) string {
	t.Helper()
	d, err := m.names.dir(name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// removeAllCgroups rmdirs dir and the cgroups below it, the deepest first.
func removeAllCgroups(t *testing.T, dir string) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			removeAllCgroups(t, filepath.Join(dir, e.Name()))
		}
	}
	if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cleanup: rmdir %s: %v", dir, err)
	}
}

func TestRealV1(t *testing.T) {
	for _, driver := range []string{"cgroupfs", "systemd"} {
		t.Run(driver, func(t *testing.T) { testRealV1(t, driver) })
	}
}

func testRealV1(t *testing.T, driver string) {
	m, h := realManager(t, driver)
	cpu, mem := h.With("cpu.shares"), h.With("memory.limit_in_bytes")
	if cpu == "" || mem == "" {
		t.Skip("no cpu or memory hierarchy")
	}
	for range 2 {
		if err := m.Setup(); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range h.Roots {
		for _, qos := range []corev1.PodQOSClass{corev1.PodQOSBurstable, corev1.PodQOSBestEffort} {
			if d := dir(t, m, m.names.qosName(qos)); !cgroupfs.Exists(filepath.Join(r, d)) {
				t.Errorf("%s%s not made", r, d)
			}
		}
	}
	best := dir(t, m, m.names.qosName(corev1.PodQOSBestEffort))
	if got := readKnob(t, filepath.Join(cpu, best, "cpu.shares")); got != "2" {
		t.Errorf("besteffort cpu.shares = %s, want 2", got)
	}

	const unlimitedMem = "9223372036854771712" // -1 as the kernel reads it back
	tests := []struct {
		uid  string
		want []string // cpu.shares, cpu.cfs_quota_us, memory.limit_in_bytes
	}{
		{uid: "g-1", want: []string{"1024", "100000", "1073741824"}},
		{uid: "b-1", want: []string{"102", "-1", unlimitedMem}},
		{uid: "e-1", want: []string{"2", "-1", unlimitedMem}},
	}
	pods := map[string]string{}
	for i, tt := range tests {
		p := pod(tt.uid, []corev1.ResourceRequirements{guaranteedRes, burstableRes, bestEffortRes}[i])
		var name string
		for range 2 {
			var err error
			if name, err = m.EnsurePod(p); err != nil {
				t.Fatalf("EnsurePod(%s): %v", tt.uid, err)
			}
		}
		if want := m.PodCgroup(p); name != want {
			t.Errorf("EnsurePod(%s) = %q, want %q", tt.uid, name, want)
		}
		pods[tt.uid] = name
		name = dir(t, m, name)
		got := []string{
			readKnob(t, filepath.Join(cpu, name, "cpu.shares")),
			readKnob(t, filepath.Join(cpu, name, "cpu.cfs_quota_us")),
			readKnob(t, filepath.Join(mem, name, "memory.limit_in_bytes")),
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s knobs (-want +got):\n%s", tt.uid, d)
		}
		for _, r := range h.Roots {
			if !cgroupfs.Exists(filepath.Join(r, name)) {
				t.Errorf("%s not made in %s", name, r)
			}
		}
		if cs := h.With("cpuset.cpus"); cs != "" {
			if got := readKnob(t, filepath.Join(cs, name, "cpuset.cpus")); got == "" {
				t.Errorf("%s: cpuset.cpus left empty", name)
			}
		}
	}
	got, err := m.Pods()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(pods, got); d != "" {
		t.Errorf("Pods() (-want +got):\n%s", d)
	}

	// Burstable's shares follow its pods' requests.
	if err := m.UpdateQOS([]*corev1.Pod{pod("g-1", guaranteedRes), pod("b-1", burstableRes), pod("b-2", burstableRes)}); err != nil {
		t.Fatal(err)
	}
	burst := dir(t, m, m.names.qosName(corev1.PodQOSBurstable))
	if got := readKnob(t, filepath.Join(cpu, burst, "cpu.shares")); got != "204" {
		t.Errorf("burstable cpu.shares = %s, want 204", got)
	}

	// A resize of the Guaranteed pod: new limits on the same cgroup.
	p := pod("g-1", res("", "2,512Mi"))
	if _, err := m.EnsurePod(p); err != nil {
		t.Fatal(err)
	}
	name := dir(t, m, pods["g-1"])
	if got := readKnob(t, filepath.Join(cpu, name, "cpu.cfs_quota_us")); got != "200000" {
		t.Errorf("quota after resize = %s, want 200000", got)
	}
	if got := readKnob(t, filepath.Join(mem, name, "memory.limit_in_bytes")); got != strconv.Itoa(512<<20) {
		t.Errorf("memory limit after resize = %s", got)
	}
}

func TestRealRemoveKills(t *testing.T) {
	m, h := realManager(t, "cgroupfs")
	p := pod("b-2", burstableRes)
	name, err := m.EnsurePod(p)
	if err != nil {
		t.Fatal(err)
	}
	name = dir(t, m, name)
	// A stray container cgroup below the pod's, with a live process in it
	// in every hierarchy.
	for _, r := range h.Roots {
		if err := os.Mkdir(filepath.Join(r, name, "ctr"), 0o755); err != nil {
			t.Fatal(err)
		}
		if cs := h.With("cpuset.cpus"); cs == r {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				if err := cgroupfs.Inherit(filepath.Join(r, name), filepath.Join(r, name, "ctr"), f); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	cmd := exec.Command("sleep", "100")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }() // reaps it, so no zombie stays in the cgroup
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	for _, r := range h.Roots {
		if err := cgroupfs.WriteFile(filepath.Join(r, name, "ctr", "cgroup.procs"), strconv.Itoa(cmd.Process.Pid)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.RemovePod("b-2"); err != nil {
		t.Fatalf("RemovePod: %v", err)
	}
	err = <-done
	done <- err
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("sleep ended with %v, want killed by SIGKILL", err)
	}
	for _, r := range h.Roots {
		if cgroupfs.Exists(filepath.Join(r, name)) {
			t.Errorf("%s still in %s", name, r)
		}
	}
	if err := m.RemovePod("b-2"); err != nil {
		t.Errorf("RemovePod of a removed pod: %v", err)
	}
	got, err := m.Pods()
	if err != nil || len(got) != 0 {
		t.Errorf("Pods() = %v, %v; want none", got, err)
	}
}
