package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// knownBugs are crib bugs a test met and excused, by description, with what
// showed them.
type knownBugs map[string][]string

func (k knownBugs) String() string {
	var out []string
	for bug, seen := range k {
		out = append(out, fmt.Sprintf("- %s\n  seen: %s", bug, strings.Join(seen, "; ")))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// The crib bugs the crash tests can meet while they stand. Each excuse
// cleans up what leaked, so that later iterations and tests start clean.
const (
	bugPauseLeak = "RunPodSandbox killed after it started the pod's pause process and before it saved the ready record: " +
		"the rollback on restore does not know the pause pid, and the pause process leaks"
	bugFailedRollback = "RunPodSandbox killed between creating the netns pin file and bind-mounting the namespace on it: " +
		"the rollback on restore runs CNI DEL on that plain file, the bridge plugin fails (unknown FS magic), the rollback " +
		"stops there and the sandbox directory leaks (its record stays, invisible to ListPodSandbox, and fails the same way at every start)"
)

// removeAllAndCheck stops and removes every pod, then checks that nothing
// of them is left: no mount (pinned namespaces, /dev/shm, rootfs), no
// process (pause, monitor, container), no cgroup, no directory, no IP
// reservation, no NAT rule of the daemon's network. known, when not nil,
// excuses the leaks of known bugs, after cleaning them up.
func (e *env) removeAllAndCheck(t *testing.T, known knownBugs) {
	t.Helper()
	pods, err := e.rt().ListPodSandbox(e.ctx(), &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if _, err := e.rt().StopPodSandbox(e.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			t.Errorf("StopPodSandbox %s: %v", p.Id, err)
		}
		if _, err := e.rt().RemovePodSandbox(e.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			t.Errorf("RemovePodSandbox %s: %v", p.Id, err)
		}
	}
	ctrs, err := e.rt().ListContainers(e.ctx(), &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ctrs.Containers) != 0 {
		t.Errorf("%d containers survived RemovePodSandbox", len(ctrs.Containers))
	}
	leaks := e.crashLeaks()
	if len(leaks) != 0 && known != nil && e.excuse(leaks, known) {
		leaks = e.crashLeaks()
	}
	if len(leaks) != 0 {
		t.Errorf("leaks:\n  %s", strings.Join(leaks, "\n  "))
		e.cleanNATRules()
	}
	if t.Failed() {
		t.FailNow()
	}
}

// crashLeaks is the daemon's leak check and the NAT rules of its network.
// It polls while processes, runtime containers or cgroups are listed: they
// take a moment to go after a kill; the rest does not go by itself.
func (e *env) crashLeaks() []string {
	var leaks []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		leaks = e.d.Leaks()
		transient := false
		for _, l := range leaks {
			for _, p := range []string{"process ", "runc container ", "cgroup "} {
				transient = transient || strings.HasPrefix(l, p)
			}
		}
		if !transient || time.Now().After(deadline) {
			break
		}
	}
	for _, r := range e.natRules() {
		leaks = append(leaks, "NAT rule "+r)
	}
	return leaks
}

// natRules are the rules of the nat table that CNI made for the daemon's
// network (none when there is no iptables).
func (e *env) natRules() []string {
	if e.d.Bridge == "" {
		return nil
	}
	out, err := exec.Command("iptables", "-w", "-t", "nat", "-S").Output()
	if err != nil {
		return nil
	}
	var rules []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, `name: \"`+e.d.Bridge+`\"`) {
			rules = append(rules, l)
		}
	}
	return rules
}

// excuse reports whether every leak is one of a known bug, and if so cleans
// them all up and notes the bugs.
func (e *env) excuse(leaks []string, known knownBugs) bool {
	failed := e.failedRollbacks()
	sandboxes := filepath.Join(e.d.State, "sandboxes") + "/"
	var pids []int
	var dirs []string
	for _, l := range leaks {
		kind, what, _ := strings.Cut(l, " ")
		switch {
		case kind == "process" && strings.HasSuffix(l, ": "+e.d.Binary+" pause"):
			var pid int
			if _, err := fmt.Sscanf(l, "process %d:", &pid); err != nil {
				return false
			}
			pids = append(pids, pid)
		case (kind == "directory" || kind == "mount") && strings.HasPrefix(what, sandboxes):
			id, _, _ := strings.Cut(strings.TrimPrefix(what, sandboxes), "/")
			if failed[id] == "" {
				return false
			}
			dirs = append(dirs, sandboxes+id)
		default:
			return false
		}
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		known[bugPauseLeak] = append(known[bugPauseLeak], fmt.Sprintf("pause pid %d", pid))
	}
	for _, dir := range uniq(dirs) {
		if err := removeTree(dir); err != nil {
			e.t.Errorf("clean up leaked sandbox directory: %v", err)
		}
		id := filepath.Base(dir)
		known[bugFailedRollback] = append(known[bugFailedRollback], fmt.Sprintf("sandbox %.12s: %s", id, failed[id]))
	}
	e.t.Logf("KNOWN BUG leaks, cleaned up:\n  %s", strings.Join(leaks, "\n  "))
	return true
}

// failedRollbacks are the sandboxes whose rollback on a restart failed, by
// id, with the daemon's log line.
func (e *env) failedRollbacks() map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(e.d.ReadLog(), "\n") {
		if !strings.Contains(l, `msg="roll back sandbox"`) {
			continue
		}
		if _, id, ok := strings.Cut(l, "sandbox="); ok {
			out[strings.Fields(id)[0]] = l
		}
	}
	return out
}

// removeTree detaches every mount under dir and removes it.
func removeTree(dir string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var mounts []string
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			mounts = append(mounts, f[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			return fmt.Errorf("unmount %s: %w", m, err)
		}
	}
	return os.RemoveAll(dir)
}

// cleanNATRules deletes the NAT rules of the daemon's network that its pods
// leaked: the harness does not.
func (e *env) cleanNATRules() {
	idPattern := regexp.MustCompile(`id: \\"([0-9a-f]{64})\\"`)
	var ids []string
	for _, r := range e.natRules() {
		if m := idPattern.FindStringSubmatch(r); m != nil {
			ids = append(ids, m[1])
		}
	}
	for _, id := range uniq(ids) {
		if err := deleteNATRules(id); err != nil {
			e.t.Errorf("clean up leaked NAT rules of %s: %v", id, err)
		}
	}
}

// deleteNATRules deletes the nat rules CNI's bridge plugin made for a
// container: its POSTROUTING rules and the chain they jump to.
func deleteNATRules(id string) error {
	out, err := exec.Command("iptables", "-w", "-t", "nat", "-L", "POSTROUTING", "-n", "--line-numbers").Output()
	if err != nil {
		return fmt.Errorf("list POSTROUTING: %w", err)
	}
	var nums []int
	var chains []string
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if !strings.Contains(l, id) || len(f) < 2 {
			continue
		}
		n, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		nums = append(nums, n)
		chains = append(chains, f[1])
	}
	sort.Sort(sort.Reverse(sort.IntSlice(nums)))
	for _, n := range nums {
		if b, err := exec.Command("iptables", "-w", "-t", "nat", "-D", "POSTROUTING", strconv.Itoa(n)).CombinedOutput(); err != nil {
			return fmt.Errorf("delete POSTROUTING rule %d: %v: %s", n, err, b)
		}
	}
	for _, c := range uniq(chains) {
		if !strings.HasPrefix(c, "CNI-") {
			continue
		}
		for _, op := range []string{"-F", "-X"} {
			if b, err := exec.Command("iptables", "-w", "-t", "nat", op, c).CombinedOutput(); err != nil {
				return fmt.Errorf("iptables %s %s: %v: %s", op, c, err, b)
			}
		}
	}
	return nil
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
