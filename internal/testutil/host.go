package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/containerd/cgroups/v3"

	"github.com/crib-dev/crib/internal/kernelstats"
	"github.com/crib-dev/crib/internal/systemd"
)

// Environment variables that point the harness at what it would otherwise
// build, on a host without Go (the test VM, scripts/vm.sh), and choose the
// cgroup driver of the daemons it starts.
const (
	// CribBinaryEnv names a crib binary BuildCrib returns instead of
	// building one.
	CribBinaryEnv = "CRIB_TEST_CRIB"
	// BusyboxTarballEnv names the busybox image tarball of
	// scripts/build-busybox-image.sh, used instead of building it.
	BusyboxTarballEnv = "CRIB_TEST_BUSYBOX"
	// CgroupDriverEnv is "systemd" to run test daemons with the systemd
	// cgroup driver; anything else means cgroupfs.
	CgroupDriverEnv = "CRIB_TEST_CGROUP_DRIVER"
	// RuntimeEnv names the OCI runtime binary (a path, or a name looked
	// up in PATH) test daemons run by default, as the handler named after
	// its base name ("crun"); unset means runc.
	RuntimeEnv = "CRIB_TEST_RUNTIME"
)

// DefaultRuntime is the handler test daemons run pods on when a request
// names none, and its binary: "runc" unless RuntimeEnv names another.
func DefaultRuntime() (handler, binary string) {
	if b := os.Getenv(RuntimeEnv); b != "" {
		return filepath.Base(b), b
	}
	return "runc", "runc"
}

// CgroupDriver is the cgroup driver test daemons use.
func CgroupDriver() string {
	if os.Getenv(CgroupDriverEnv) == "systemd" {
		return "systemd"
	}
	return "cgroupfs"
}

// cgroupRoot is where the host's cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// Unified reports whether the host has only the cgroup v2 hierarchy.
func Unified() bool { return cgroups.Mode() == cgroups.Unified }

// CgroupDirs are the directories of cgroup path (a cgroupfs path, or a
// systemd slice name such as "a-b.slice") in every mounted hierarchy that
// has it.
func CgroupDirs(path string) []string {
	rel := path
	if strings.HasSuffix(path, ".slice") {
		expanded, err := kernelstats.ExpandSlice(path)
		if err != nil {
			return nil
		}
		rel = expanded
	}
	var candidates []string
	if Unified() {
		candidates = []string{filepath.Join(cgroupRoot, rel)}
	} else {
		hierarchies, _ := os.ReadDir(cgroupRoot)
		for _, h := range hierarchies {
			candidates = append(candidates, filepath.Join(cgroupRoot, h.Name(), rel))
		}
	}
	var out []string
	for _, p := range candidates {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			out = append(out, p)
		}
	}
	return out
}

// SystemdUnits lists the units systemd has loaded that match the glob
// patterns, as "name load active sub" (none when systemd is not running).
func SystemdUnits(patterns ...string) []string {
	if !systemd.Booted() {
		return nil
	}
	args := append([]string{"list-units", "--all", "--plain", "--no-legend", "--no-pager"}, patterns...)
	out, err := exec.Command("systemctl", args...).Output()
	if err != nil {
		return []string{"(systemctl list-units: " + err.Error() + ")"}
	}
	var units []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			units = append(units, strings.Join(f[:min(4, len(f))], " "))
		}
	}
	return units
}

// StopSystemdUnits stops the units whose names start with prefix and
// forgets failed ones.
func StopSystemdUnits(prefix string) error {
	if !systemd.Booted() {
		return nil
	}
	if out, err := exec.Command("systemctl", "stop", prefix+"*").CombinedOutput(); err != nil {
		return fmt.Errorf("systemctl stop %s*: %w: %s", prefix, err, out)
	}
	_ = exec.Command("systemctl", "reset-failed", prefix+"*").Run()
	return nil
}

// Threads is the number of threads of process pid, from its status.
func Threads(t testing.TB, pid int) int {
	t.Helper()
	return ProcStatus(t, pid, "Threads")
}

// ProcStatus is the number a field of /proc/PID/status holds ("Threads",
// "PPid", "VmRSS" in kB: a unit after the number is dropped).
func ProcStatus(t testing.TB, pid int, field string) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			value, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
			n, err := strconv.Atoi(value)
			if err != nil {
				t.Fatalf("pid %d: %s %q: %v", pid, field, rest, err)
			}
			return n
		}
	}
	t.Fatalf("pid %d: no %s in its status", pid, field)
	return 0
}
