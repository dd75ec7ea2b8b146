package podcgroup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/cgroupfs"
	"github.com/crib-dev/crib/internal/kernelstats"
	"github.com/crib-dev/crib/internal/systemd"
)

// unit is a slice as fakeSlices keeps it.
type unit struct {
	Description string
	Res         systemd.Resources
}

// fakeSlices stands in for systemd: it keeps the slices started, and makes
// and removes their directories under fs (a fakeV2) as systemd realizes
// and prunes their cgroups.
type fakeSlices struct {
	fs    string
	units map[string]unit
}

func (f *fakeSlices) EnsureSlice(_ context.Context, name, description string, res systemd.Resources) error {
	u, ok := f.units[name]
	if !ok {
		dir, err := kernelstats.ExpandSlice(name)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(f.fs, dir), 0o755); err != nil {
			return err
		}
		u.Description = description
	}
	set := func(dst *uint64, v uint64) {
		if v != 0 {
			*dst = v
		}
	}
	set(&u.Res.CPUWeight, res.CPUWeight)
	set(&u.Res.CPUQuotaPerSecUSec, res.CPUQuotaPerSecUSec)
	set(&u.Res.MemoryMax, res.MemoryMax)
	set(&u.Res.TasksMax, res.TasksMax)
	f.units[name] = u
	return nil
}

func (f *fakeSlices) Stop(_ context.Context, name string) error {
	if _, ok := f.units[name]; !ok {
		return nil
	}
	delete(f.units, name)
	dir, err := kernelstats.ExpandSlice(name)
	if err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(f.fs, dir))
}

const inf = systemd.Unlimited

func TestSystemdSlices(t *testing.T) {
	fs := fakeV2(t)
	fake := &fakeSlices{fs: fs, units: map[string]unit{}}
	m := newManager(Config{Root: "kubepods", Driver: "systemd", FS: fs}, nil)
	m.units = fake
	m.rmdir = os.RemoveAll
	if err := m.Setup(); err != nil {
		t.Fatal(err)
	}
	want := map[string]unit{
		"kubepods.slice":            {"crib pods", systemd.Resources{}},
		"kubepods-burstable.slice":  {"crib burstable pods", systemd.Resources{}},
		"kubepods-besteffort.slice": {"crib besteffort pods", systemd.Resources{CPUWeight: 1}},
	}
	if d := cmp.Diff(want, fake.units); d != "" {
		t.Fatalf("slices after Setup (-want +got):\n%s", d)
	}

	tests := []struct {
		uid  string
		res  corev1.ResourceRequirements
		name string
		want systemd.Resources
	}{
		{"g-1", guaranteedRes, "kubepods-podg_1.slice", systemd.Resources{CPUWeight: 39, CPUQuotaPerSecUSec: 1000000, MemoryMax: 1 << 30}},
		{"b-1", burstableRes, "kubepods-burstable-podb_1.slice", systemd.Resources{CPUWeight: 4, CPUQuotaPerSecUSec: inf, MemoryMax: inf}},
		{"e-1", bestEffortRes, "kubepods-besteffort-pode_1.slice", systemd.Resources{CPUWeight: 1, CPUQuotaPerSecUSec: inf, MemoryMax: inf}},
	}
	wantPods := map[string]string{}
	for _, tt := range tests {
		p := pod(tt.uid, tt.res)
		for range 2 { // idempotent
			name, err := m.EnsurePod(p)
			if err != nil {
				t.Fatal(err)
			}
			if name != tt.name {
				t.Errorf("EnsurePod(%s) = %q, want %q", tt.uid, name, tt.name)
			}
		}
		want[tt.name] = unit{"crib pod default/p (" + tt.uid + ")", tt.want}
		wantPods[tt.uid] = tt.name
	}
	if d := cmp.Diff(want, fake.units); d != "" {
		t.Errorf("slices after EnsurePod (-want +got):\n%s", d)
	}
	// Nothing is written behind systemd's back.
	_ = filepath.WalkDir(fs, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && filepath.Dir(p) != fs {
			t.Errorf("knob written: %s", p)
		}
		return err
	})
	got, err := m.Pods()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(wantPods, got); d != "" {
		t.Errorf("Pods() (-want +got):\n%s", d)
	}

	// Burstable's weight follows its pods' requests.
	if err := m.UpdateQOS([]*corev1.Pod{pod("b-1", res("2,", ""))}); err != nil {
		t.Fatal(err)
	}
	if got := fake.units["kubepods-burstable.slice"].Res.CPUWeight; got != 79 {
		t.Errorf("burstable CPUWeight = %d, want 79", got)
	}

	// A resize that changes the class moves the pod to a new slice and
	// stops the old one when it is empty, and only then.
	if _, err := m.EnsurePod(pod("g-1", res("1,", ""))); err != nil {
		t.Fatal(err)
	}
	if _, ok := fake.units["kubepods-podg_1.slice"]; ok {
		t.Error("the empty slice of g-1's old class was not stopped")
	}
	busy := filepath.Join(fs, "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podb_1.slice/cgroup.procs")
	if err := os.WriteFile(busy, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.EnsurePod(pod("b-1", guaranteedRes)); err != nil {
		t.Fatal(err)
	}
	if _, ok := fake.units["kubepods-burstable-podb_1.slice"]; !ok {
		t.Error("the busy slice of b-1's old class was stopped")
	}
	if err := os.Remove(busy); err != nil {
		t.Fatal(err)
	}

	for _, uid := range []string{"g-1", "b-1", "e-1"} {
		for range 2 { // idempotent
			if err := m.RemovePod(uid); err != nil {
				t.Fatalf("RemovePod(%s): %v", uid, err)
			}
		}
	}
	var left []string
	for name := range fake.units {
		left = append(left, name)
	}
	slices.Sort(left)
	if d := cmp.Diff([]string{"kubepods-besteffort.slice", "kubepods-burstable.slice", "kubepods.slice"}, left); d != "" {
		t.Errorf("slices after RemovePod (-want +got):\n%s", d)
	}
	if got, err := m.Pods(); err != nil || len(got) != 0 {
		t.Errorf("Pods() after removal = %v, %v", got, err)
	}
}

// TestSystemdLeftoverDir checks that RemovePod cleans up a pod slice
// directory systemd does not know, as an earlier crib made them.
func TestSystemdLeftoverDir(t *testing.T) {
	fs := fakeV2(t)
	m := newManager(Config{Root: "kubepods", Driver: "systemd", FS: fs}, nil)
	m.rmdir = os.RemoveAll
	name, err := m.EnsurePod(pod("u-1", burstableRes)) // cgroupfs writes
	if err != nil {
		t.Fatal(err)
	}
	m.units = &fakeSlices{fs: fs, units: map[string]unit{}}
	if got, err := m.Pods(); err != nil || got["u-1"] != name {
		t.Errorf("Pods() = %v, %v; want u-1 in %s", got, err, name)
	}
	if err := m.RemovePod("u-1"); err != nil {
		t.Fatal(err)
	}
	if got, err := m.Pods(); err != nil || len(got) != 0 {
		t.Errorf("Pods() after removal = %v, %v", got, err)
	}
}

func TestSystemdNotRunning(t *testing.T) {
	m := New(Config{Driver: "systemd", FS: fakeV2(t)}, nil)
	if got := m.CgroupParent(); got != "kubepods.slice" {
		t.Errorf("CgroupParent() = %q", got)
	}
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, errdefs.ErrFailedPrecondition) || !strings.Contains(err.Error(), "systemd is not running") {
			t.Errorf("%s = %v, want systemd is not running", what, err)
		}
	}
	check("Setup()", m.Setup())
	check("UpdateQOS()", m.UpdateQOS(nil))
	_, err := m.EnsurePod(pod("u", burstableRes))
	check("EnsurePod()", err)
	check("RemovePod()", m.RemovePod("u"))
	_, err = m.Pods()
	check("Pods()", err)
}

// TestRealSystemd runs the systemd driver against the host's systemd,
// under a root slice of its own that is stopped when the test ends.
func TestRealSystemd(t *testing.T) {
	needRoot(t)
	if !systemd.Booted() {
		t.Skip("systemd is not running")
	}
	h, err := cgroupfs.Find(DefaultFS)
	if err != nil {
		t.Skipf("no cgroups: %v", err)
	}
	client := systemd.New()
	t.Cleanup(client.Close)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	root := "cribpodcgtest" + hex.EncodeToString(b) // a dash would nest it in more slices
	m := New(Config{Root: root, Driver: "systemd", Systemd: client}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Cleanup(func() {
		if err := client.Stop(context.Background(), root+".slice"); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	units := func() []string {
		t.Helper()
		names, err := client.Units(ctx, root+".slice", root+"-*.slice")
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		return names
	}
	for range 2 {
		if err := m.Setup(); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{root + "-besteffort.slice", root + "-burstable.slice", root + ".slice"}
	if d := cmp.Diff(want, units()); d != "" {
		t.Errorf("units after Setup (-want +got):\n%s", d)
	}
	pods := map[string]string{}
	for uid, r := range map[string]corev1.ResourceRequirements{"g-1": guaranteedRes, "b-1": burstableRes, "e-1": bestEffortRes} {
		for range 2 {
			name, err := m.EnsurePod(pod(uid, r))
			if err != nil {
				t.Fatalf("EnsurePod(%s): %v", uid, err)
			}
			pods[uid] = name
		}
		want = append(want, pods[uid])
	}
	slices.Sort(want)
	if d := cmp.Diff(want, units()); d != "" {
		t.Errorf("units after EnsurePod (-want +got):\n%s", d)
	}
	got, err := m.Pods()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(pods, got); d != "" {
		t.Errorf("Pods() (-want +got):\n%s", d)
	}
	// systemd wrote the Guaranteed pod's limits.
	g := dir(t, m, pods["g-1"])
	if h.Unified {
		if got := readKnob(t, filepath.Join(DefaultFS, g, "memory.max")); got != "1073741824" {
			t.Errorf("memory.max = %s, want 1Gi", got)
		}
		if got := readKnob(t, filepath.Join(DefaultFS, g, "cpu.max")); got != "100000 100000" {
			t.Errorf("cpu.max = %s, want one cpu", got)
		}
	} else if mem := h.With("memory.limit_in_bytes"); mem != "" {
		if got := readKnob(t, filepath.Join(mem, g, "memory.limit_in_bytes")); got != "1073741824" {
			t.Errorf("memory.limit_in_bytes = %s, want 1Gi", got)
		}
	}

	// A process in a scope below the pod's slice is killed on removal.
	var cmd *exec.Cmd
	done := make(chan error, 1)
	if run, err := exec.LookPath("systemd-run"); err == nil {
		cmd = exec.Command(run, "--scope", "--quiet", "--slice="+pods["b-1"], "sleep", "100")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			done <- <-done
		})
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			cg, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cgroup")
			if strings.Contains(string(cg), pods["b-1"]+"/") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("systemd-run did not move into %s:\n%s", pods["b-1"], cg)
			}
		}
	}
	for uid := range pods {
		for range 2 {
			if err := m.RemovePod(uid); err != nil {
				t.Fatalf("RemovePod(%s): %v", uid, err)
			}
		}
	}
	if cmd != nil {
		err := <-done
		done <- err
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("process in the pod's slice ended with %v, want killed by SIGKILL", err)
		}
	}
	want = []string{root + "-besteffort.slice", root + "-burstable.slice", root + ".slice"}
	if d := cmp.Diff(want, units()); d != "" {
		t.Errorf("units after RemovePod (-want +got):\n%s", d)
	}
	if got, err := m.Pods(); err != nil || len(got) != 0 {
		t.Errorf("Pods() after removal = %v, %v", got, err)
	}
}
