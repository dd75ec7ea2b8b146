package integration

import (
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crib-dev/crib/internal/testutil"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// removeAllAndCheck stops and removes every pod, then checks that nothing
// of them is left: no mount (pinned namespaces, /dev/shm, rootfs), no
// process (pause, monitor, container), no cgroup, no directory, no IP
// reservation, no NAT rule of the daemon's network.
func (e *env) removeAllAndCheck(t *testing.T) {
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
	for deadline := time.Now().Add(testutil.Patience(5 * time.Second)); ; time.Sleep(100 * time.Millisecond) {
		leaks = e.d.Leaks()
		transient := false
		for _, l := range leaks {
			for _, p := range []string{"process ", "runc container ", "cgroup ", "systemd unit "} {
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
