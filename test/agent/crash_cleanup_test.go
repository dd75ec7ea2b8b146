package agenttest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// assertTornDown waits until the agent lists no pod, the runtime holds no
// sandbox or container, the agent's pod directories and the pod log root
// are empty, and no pod cgroup of the pods seen is left.
func (a *cribAgent) assertTornDown(t *testing.T) {
	t.Helper()
	a.waitPods(t, "no pods listed", teardownWait, func(pods map[string]*corev1.Pod) bool { return len(pods) == 0 })
	deadline := time.Now().Add(teardownWait)
	for {
		left := a.leftovers()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after the manifests went, still left: %v", teardownWait, left)
		}
		time.Sleep(pollEvery)
	}
}

// leftovers are what the runtime, the agent's directories and the pod
// cgroups still hold.
func (a *cribAgent) leftovers() []string {
	var out []string
	ctx, cancel := context.WithTimeout(context.Background(), criTimeout)
	defer cancel()
	if sbs, err := a.rt.ListPodSandbox(ctx, nil); err != nil {
		out = append(out, "list sandboxes: "+err.Error())
	} else {
		for _, s := range sbs {
			out = append(out, fmt.Sprintf("sandbox %s of %s (%s)", s.Id, s.GetMetadata().GetName(), s.State))
		}
	}
	if ctrs, err := a.rt.ListContainers(ctx, nil); err != nil {
		out = append(out, "list containers: "+err.Error())
	} else {
		for _, c := range ctrs {
			out = append(out, fmt.Sprintf("container %s (%s, %s)", c.Id, c.GetMetadata().GetName(), c.State))
		}
	}
	for _, dir := range []string{filepath.Join(a.AgentRoot, "pods"), a.LogRoot} {
		entries, err := os.ReadDir(dir)
		if err != nil && !os.IsNotExist(err) {
			out = append(out, err.Error())
		}
		for _, e := range entries {
			out = append(out, "directory "+filepath.Join(dir, e.Name()))
		}
	}
	for _, c := range a.podCgroups() {
		out = append(out, "cgroup "+c)
	}
	return out
}

// podCgroups are the cgroups of the pods seen, in every hierarchy, where
// the cgroupfs driver puts them: /<CgroupRoot>[/<qos>]/pod<uid>.
func (a *cribAgent) podCgroups() []string {
	var out []string
	for uid := range a.uids {
		for _, qos := range []string{"", "besteffort", "burstable"} {
			matches, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", a.CgroupRoot, qos, "pod"+uid))
			out = append(out, matches...)
		}
	}
	sort.Strings(out)
	return out
}

// stopAndCheckLeaks stops the agent with SIGTERM and checks that nothing
// of crib is left (testutil's leak check): no process of its binary or
// naming its directories (monitors included), no mount under its
// directories (/proc/self/mountinfo), no runc container, no cgroup under
// its cgroup parent, no sandbox or container directory.
func (a *cribAgent) stopAndCheckLeaks(t *testing.T) {
	t.Helper()
	if err := a.stop(); err != nil {
		t.Error(err)
	}
	leaks := a.waitNoLeaks()
	for _, l := range leaks {
		t.Errorf("leak: %s", l)
	}
	if len(leaks) == 0 && !t.Failed() {
		a.clean = true
	}
}

// leakCheck describes the agent's runtime for testutil's leak check.
func (a *cribAgent) leakCheck() *testutil.Daemon {
	return &testutil.Daemon{Dir: a.Dir, Root: a.Root, State: a.State, Socket: a.Socket,
		Binary: a.Binary, CgroupParent: a.CgroupParent, Bridge: a.Network}
}

// waitNoLeaks gives processes that were just told to quit a few seconds.
func (a *cribAgent) waitNoLeaks() []string {
	deadline := time.Now().Add(testutil.Patience(10 * time.Second))
	for {
		leaks := a.leakCheck().Leaks()
		if len(leaks) == 0 || time.Now().After(deadline) {
			return leaks
		}
		time.Sleep(pollEvery)
	}
}

// cleanup drains what the test left (starting the agent again with no
// manifests when needed), stops the agent, removes leaks by force and the
// pods' cgroups, and removes the directories.
func (a *cribAgent) cleanup() {
	t := a.t
	if !a.clean && a.done != nil {
		entries, _ := os.ReadDir(a.Manifests)
		for _, e := range entries {
			_ = os.Remove(filepath.Join(a.Manifests, e.Name()))
		}
		if !a.running() {
			if err := a.startErr(); err != nil {
				t.Errorf("cleanup: start crib agent to tear the pods down: %v", err)
			}
		}
		if a.running() && a.rt != nil {
			deadline := time.Now().Add(teardownWait)
			for len(a.leftovers()) > 0 && time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
			}
		}
		if err := a.stop(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
	if leaks := a.waitNoLeaks(); len(leaks) > 0 {
		if !t.Failed() {
			t.Errorf("cleanup: leaks %v", leaks)
		}
		if err := a.leakCheck().ForceClean(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
	for _, c := range a.podCgroups() {
		if err := testutil.RemoveCgroupTree(c); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
	// Then the agent's root and QoS cgroups, the test's own.
	hierarchies, _ := os.ReadDir("/sys/fs/cgroup")
	for _, h := range hierarchies {
		base := filepath.Join("/sys/fs/cgroup", h.Name(), a.CgroupRoot)
		for _, d := range []string{filepath.Join(base, "besteffort"), filepath.Join(base, "burstable"), base} {
			_ = os.Remove(d)
		}
	}
	if a.releaseNetwork != nil {
		if err := a.releaseNetwork(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
	if t.Failed() {
		t.Logf("crib agent log (tail):\n%s", a.logTail())
	}
	if err := os.RemoveAll(a.Dir); err != nil {
		t.Errorf("cleanup: %v", err)
	}
}

func (a *cribAgent) logTail() string {
	b, err := os.ReadFile(a.Log)
	if err != nil {
		return err.Error()
	}
	const max = 200 << 10
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// alive checks that pid runs and is not a zombie.
func alive(pid int) error {
	if err := syscall.Kill(pid, 0); err != nil {
		return err
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return err
	}
	if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return errors.New("zombie")
	}
	return nil
}

// parentOf describes pid's parent process, for the log.
func parentOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			ppid := strings.TrimSpace(v)
			cmdline, _ := os.ReadFile("/proc/" + ppid + "/cmdline")
			return ppid + " (" + strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " ")) + ")"
		}
	}
	return "unknown"
}

// freeAddr is a loopback TCP address free at the time of the call.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
