package testutil

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/crib-dev/crib/internal/mount"
)

// leakWait is how long the leak check gives processes that were just
// killed to disappear before it reports them.
const leakWait = 5 * time.Second

// Leaks lists what of this daemon is on the machine besides the daemon
// itself: mounts under its directories, runc containers under its runtime
// root, processes that run its binary or name its directories, cgroups
// under its cgroup parent, and entries of its sandbox and container
// directories. A daemon with no pods has none.
func (d *Daemon) Leaks() []string {
	var out []string
	for _, m := range d.mounts() {
		out = append(out, "mount "+m)
	}
	for _, c := range d.runtimeContainers() {
		out = append(out, "runc container "+c.id)
	}
	for _, p := range d.processes() {
		out = append(out, fmt.Sprintf("process %d: %s", p.pid, p.cmdline))
	}
	for _, c := range d.cgroups() {
		out = append(out, "cgroup "+c)
	}
	if prefix := d.systemdPrefix(); prefix != "" {
		// The pods' slices; the parent slice itself is the harness's, as
		// the parent directory is under cgroupfs. Scopes sit in the
		// slices and show as cgroups.
		for _, u := range SystemdUnits(prefix + "-*") {
			out = append(out, "systemd unit "+u)
		}
	}
	if d.Bridge != "" {
		for _, port := range bridgePorts(d.Bridge) {
			out = append(out, "interface "+port+" on bridge "+d.Bridge)
		}
	}
	for _, ip := range d.reservedIPs() {
		out = append(out, "IP "+ip+" reserved")
	}
	for _, dir := range []string{
		filepath.Join(d.State, "sandboxes"),
		filepath.Join(d.State, "containers"),
		filepath.Join(d.Root, "containers"),
	} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			out = append(out, "directory "+filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// reservedIPs are the pod IPs host-local still holds for the daemon's
// default network.
func (d *Daemon) reservedIPs() []string {
	entries, _ := os.ReadDir(filepath.Join(d.Root, "cni", "networks", d.Bridge))
	var out []string
	for _, e := range entries {
		if e.Name() != "lock" && !strings.HasPrefix(e.Name(), "last_reserved_ip") {
			out = append(out, e.Name())
		}
	}
	return out
}

// waitNoLeaks polls Leaks until it is empty or leakWait has passed, and
// returns the last answer.
func (d *Daemon) waitNoLeaks() []string {
	deadline := time.Now().Add(Patience(leakWait))
	for {
		leaks := d.Leaks()
		if len(leaks) == 0 || time.Now().After(deadline) {
			return leaks
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dirs are the directories the daemon owns (State is inside Dir today;
// the leak check does not rely on it).
func (d *Daemon) dirs() []string { return []string{d.Dir, d.State} }

// under reports whether path is one of the daemon's directories or inside
// one.
func (d *Daemon) under(path string) bool {
	for _, dir := range d.dirs() {
		if path == dir || strings.HasPrefix(path, dir+"/") {
			return true
		}
	}
	return false
}

// mentions reports whether s names a path inside one of the daemon's
// directories. (Temporary names differ in length, so a bare directory name
// could be the prefix of another daemon's.)
func (d *Daemon) mentions(s string) bool {
	for _, dir := range d.dirs() {
		if strings.Contains(s, dir+"/") {
			return true
		}
	}
	return false
}

// mounts are the mount points under the daemon's directories.
func (d *Daemon) mounts() []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return []string{"(read mountinfo: " + err.Error() + ")"}
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		if p := unescapeMount(fields[4]); d.under(p) {
			out = append(out, p)
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// runtimeContainer is a container an OCI runtime of the daemon knows.
type runtimeContainer struct {
	id, binary, root string
}

// runtimeContainers are the ids `runc list` (or the default runtime's
// list: crun's has the same options) shows under the runtime roots of the
// runc handler and of the default one.
func (d *Daemon) runtimeContainers() []runtimeContainer {
	var out []runtimeContainer
	handler, bin := DefaultRuntime()
	runtimes := [][2]string{{"runc", "runc"}}
	if handler != "runc" {
		runtimes = append(runtimes, [2]string{handler, bin})
	}
	for _, r := range runtimes {
		root := filepath.Join(d.State, "runtime", r[0])
		if _, err := os.Stat(root); err != nil {
			continue
		}
		list, err := exec.Command(r[1], "--root", root, "list", "-q").Output()
		if err != nil {
			out = append(out, runtimeContainer{id: "(" + r[1] + " list: " + err.Error() + ")"})
			continue
		}
		for _, id := range strings.Fields(string(list)) {
			out = append(out, runtimeContainer{id: id, binary: r[1], root: root})
		}
	}
	return out
}

type process struct {
	pid     int
	cmdline string
}

// processes are those, other than the daemon and this test, that run this
// daemon's binary or name its directory in their arguments.
func (d *Daemon) processes() []process {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return []process{{cmdline: "(read /proc: " + err.Error() + ")"}}
	}
	var out []process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || pid == d.Pid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmdline := strings.TrimSpace(string(bytes.ReplaceAll(raw, []byte{0}, []byte{' '})))
		exe, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if (d.mentions(cmdline) || d.under(exe)) && !d.idleMonitor(pid, cmdline) {
			out = append(out, process{pid: pid, cmdline: cmdline})
		}
	}
	return out
}

// idleMonitor reports whether pid is a monitor the running daemon keeps
// waiting for a container (see monitor.Pool): the daemon's child, with no
// container (no child) of its own. It quits when the daemon stops.
func (d *Daemon) idleMonitor(pid int, cmdline string) bool {
	if !d.Running() || !strings.HasSuffix(cmdline, " monitor idle") {
		return false
	}
	children, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil || len(bytes.TrimSpace(children)) != 0 {
		return false
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	return err == nil && bytes.Contains(status, []byte(fmt.Sprintf("\nPPid:\t%d\n", d.Pid())))
}

// cgroupParents are the daemon's cgroup parent in every hierarchy.
func (d *Daemon) cgroupParents() []string {
	return CgroupDirs(d.CgroupParent)
}

// systemdPrefix is the prefix of the systemd units of the daemon's pods
// under the systemd driver ("" under cgroupfs).
func (d *Daemon) systemdPrefix() string {
	if !strings.HasSuffix(d.CgroupParent, ".slice") {
		return ""
	}
	return strings.TrimSuffix(d.CgroupParent, ".slice")
}

// cgroups are the cgroups under the daemon's cgroup parent.
func (d *Daemon) cgroups() []string {
	var out []string
	for _, parent := range d.cgroupParents() {
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			if e.IsDir() {
				out = append(out, filepath.Join(parent, e.Name()))
			}
		}
	}
	return out
}

// ForceClean removes by force whatever Leaks reports, as the cleanup of
// StartDaemon does. It is for tests that run crib themselves (`crib agent`
// with its in-process runtime) and describe its directories with a Daemon
// of their own; the daemon, if any, must be stopped first.
func (d *Daemon) ForceClean() error { return d.forceClean() }

// forceClean removes by force whatever the daemon left: processes killed,
// runc containers deleted, mounts detached, cgroups emptied and removed
// (the cgroup parent too, which is this harness's).
func (d *Daemon) forceClean() error {
	var errs []error
	for _, p := range d.processes() {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
	for _, c := range d.runtimeContainers() {
		if c.binary == "" {
			continue
		}
		if out, err := exec.Command(c.binary, "--root", c.root, "delete", "--force", c.id).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s delete %s: %v: %s", c.binary, c.id, err, out))
		}
	}
	mounts := d.mounts()
	sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
	for _, m := range mounts {
		if err := mount.Unmount(m); err != nil {
			errs = append(errs, err)
		}
	}
	if prefix := d.systemdPrefix(); prefix != "" {
		if err := StopSystemdUnits(prefix); err != nil {
			errs = append(errs, err)
		}
	}
	for _, parent := range d.cgroupParents() {
		if err := RemoveCgroupTree(parent); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RemoveCgroupTree kills every process in the cgroups under dir and removes
// them, deepest first.
func RemoveCgroupTree(dir string) error {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := removeCgroup(dirs[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func removeCgroup(dir string) error {
	deadline := time.Now().Add(Patience(leakWait))
	for {
		procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, f := range strings.Fields(string(procs)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
