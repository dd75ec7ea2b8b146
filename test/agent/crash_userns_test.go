package agenttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/userns"
)

// TestAgentKilledDuringUserNamespacePod kills `crib agent` (agent and
// runtime in one process) with SIGKILL at spread delays after the manifest
// of two hostUsers: false pods appears: before the agent reads it, while
// it allocates their blocks, makes their user namespaces, sandboxes and
// id-mapped rootfs, and once they run. Each time a new agent must run both
// pods as root in their own blocks, keep a block already written, never
// give both pods one block; and once the manifest is gone, leave no mount,
// id-mapped mount, process, cgroup, pod directory or block behind: the
// next pods get the lowest blocks again.
func TestAgentKilledDuringUserNamespacePod(t *testing.T) {
	a := newCribAgent(t)
	a.usePodNetwork(t)
	a.start(t)
	a.requireUserNamespaces(t)

	// Without a crash: how long the pods take, and the lowest blocks, which
	// every round's pods must get again once the last ones are gone.
	lowest, took := a.usernsRound(t, "clean", -1, nil)
	t.Logf("two hostUsers: false pods ran in %s with %v", took.Round(time.Millisecond), lowest)

	// As test/integration's crashDelays: before the agent reads the
	// manifest, while it writes the blocks and the runtime makes the
	// sandboxes (user namespace, pause, network), then the containers
	// (id-mapped layers, overlay), and once the pods run.
	delays := []time.Duration{0, 5 * time.Millisecond}
	for _, f := range []float64{0.05, 0.25, 0.5, 0.75, 0.9, 1, 1.5} {
		delays = append(delays, time.Duration(f*float64(took)))
	}
	for i, delay := range delays {
		a.usernsRound(t, fmt.Sprintf("kill%d", i), delay, lowest)
	}
	a.usernsRound(t, "after", -1, lowest)
}

// usernsRound writes a manifest of two hostUsers: false pods named after
// round, SIGKILLs the agent delay after (none when delay < 0) and starts
// it again, and checks the pods and their blocks; want, when set, are the
// blocks they must hold. Then it removes the manifest, waits for the
// teardown, stops the agent, checks for leaks, and starts it again. It
// returns the pods' blocks, sorted, and how long after the manifest they
// ran.
func (a *cribAgent) usernsRound(t *testing.T, round string, delay time.Duration, want []userns.Range) ([]userns.Range, time.Duration) {
	t.Helper()
	names := []string{round + "-a", round + "-b"}
	pods := make([]any, len(names))
	for i, n := range names {
		pods[i] = a.usernsPod(n)
	}
	file := round + ".yaml"
	a.writeObjects(t, file, pods...)
	begin := time.Now()

	var before map[string]userns.Range
	if delay >= 0 {
		time.Sleep(delay)
		a.kill9(t)
		before = a.usernsFiles(t)
		t.Logf("%s: killed %s after the manifest; by then %d sandbox and %d container state dirs, blocks %v",
			round, delay, a.stateDirs("sandboxes"), a.stateDirs("containers"), before)
		a.start(t)
	}

	got := a.waitPods(t, round+": both pods running with a block", longWait, func(ps map[string]*corev1.Pod) bool {
		for _, n := range names {
			if !running(ps[n], "app") || ps[n].Annotations[labels.UserNamespace] == "" {
				return false
			}
		}
		return true
	})
	ran := time.Since(begin)
	files := a.usernsFiles(t)
	var blocks []userns.Range
	for _, n := range names {
		p := got[n]
		uid := string(p.UID)
		r, err := parseRange(p.Annotations[labels.UserNamespace])
		if err != nil {
			t.Fatalf("%s: pod %s: %v", round, n, err)
		}
		if f, ok := files[uid]; !ok || f != r {
			t.Errorf("%s: pod %s shows %s on /pods, its %s file holds %v (present %t)", round, n, r, userns.FileName, f, ok)
		}
		if b, ok := before[uid]; ok && b != r {
			t.Errorf("%s: pod %s had %s before the SIGKILL and %s after", round, n, b, r)
		}
		a.checkUsernsPod(t, round, p, r)
		blocks = append(blocks, r)
	}
	slices.SortFunc(blocks, func(x, y userns.Range) int { return int(int64(x.First) - int64(y.First)) })
	if blocks[0] == blocks[1] {
		t.Errorf("%s: both pods hold %s", round, blocks[0])
	}
	if want != nil && !slices.Equal(blocks, want) {
		t.Errorf("%s: the pods hold %v, want the lowest blocks %v: a block was not freed", round, blocks, want)
	}
	if len(files) != len(names) {
		t.Errorf("%s: %d %s files for %d pods: %v", round, len(files), userns.FileName, len(names), files)
	}

	a.removeFile(t, file)
	a.assertTornDown(t)
	if err := a.stop(); err != nil {
		t.Fatalf("%s: %v", round, err)
	}
	if leaks := a.waitNoLeaks(); len(leaks) > 0 {
		t.Fatalf("%s: after the teardown and a clean stop, left: %v", round, leaks)
	}
	if left := a.usernsFiles(t); len(left) > 0 {
		t.Fatalf("%s: blocks left in pod directories: %v", round, left)
	}
	a.start(t)
	return blocks, ran
}

// stateDirs counts the runtime's state directories of kind ("sandboxes"
// or "containers"), to tell where a SIGKILL landed.
func (a *cribAgent) stateDirs(kind string) int {
	entries, _ := os.ReadDir(filepath.Join(a.State, kind))
	n := 0
	for _, e := range entries {
		if e.IsDir() {
			n++
		}
	}
	return n
}

// usernsPod is a pod with hostUsers: false on the pod network whose
// container prints its uid and uid map and writes its emptyDir, then
// sleeps.
func (a *cribAgent) usernsPod(name string) *corev1.Pod {
	return usernsPod(&runtimeEnv{image: a.image}, name)
}

// checkUsernsPod checks from the running container's log and its process
// that it is root inside with ids 0-65535 mapped to r.
func (a *cribAgent) checkUsernsPod(t *testing.T, round string, p *corev1.Pod, r userns.Range) {
	t.Helper()
	wantMap := fmt.Sprintf("0 %d %d", r.First, r.Length)
	logs := containerLogs(a.LogRoot, p, "app")
	if len(logs) == 0 {
		t.Fatalf("%s: pod %s: no log", round, p.Name)
	}
	lines := waitLog(t, logs[len(logs)-1], "uid, uid map and emptyDir", func(l []string) bool { return len(l) >= 3 })
	if lines[0] != "0" {
		t.Errorf("%s: pod %s: id -u printed %q, want 0", round, p.Name, lines[0])
	}
	if got := strings.Join(strings.Fields(lines[1]), " "); got != wantMap {
		t.Errorf("%s: pod %s: its uid_map is %q, want %q", round, p.Name, got, wantMap)
	}
	if lines[2] != "written" {
		t.Errorf("%s: pod %s: the emptyDir was not writable: %q", round, p.Name, lines[2])
	}
	pid := a.containerPid(t, containerStatus(p, "app").ContainerID)
	m, err := os.ReadFile(fmt.Sprintf("/proc/%d/uid_map", pid))
	if err != nil {
		t.Fatalf("%s: pod %s: %v", round, p.Name, err)
	}
	if got := strings.Join(strings.Fields(string(m)), " "); got != wantMap {
		t.Errorf("%s: pod %s: the container's process (pid %d) has uid_map %q, want %q", round, p.Name, pid, got, wantMap)
	}
}

// usernsFiles are the blocks written in the agent's pod directories, by
// pod UID.
func (a *cribAgent) usernsFiles(t *testing.T) map[string]userns.Range {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(a.AgentRoot, "pods", "*", userns.FileName))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]userns.Range{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // removed since the glob
		}
		if err != nil {
			t.Fatal(err)
		}
		// The kubelet's layout: one uid and one gid mapping from id 0.
		var f struct {
			UIDMappings []struct {
				HostID uint32 `json:"hostId"`
				Length uint32 `json:"length"`
			} `json:"uidMappings"`
		}
		if err := json.Unmarshal(data, &f); err != nil || len(f.UIDMappings) != 1 {
			t.Fatalf("%s: %q is not one mapping (%v)", path, data, err)
		}
		out[filepath.Base(filepath.Dir(path))] = userns.Range{First: f.UIDMappings[0].HostID, Length: f.UIDMappings[0].Length}
	}
	return out
}

// requireUserNamespaces skips the test unless the agent's runtime says its
// default handler supports user namespaces; with CRIB_REQUIRE_USERNS set
// it fails instead.
func (a *cribAgent) requireUserNamespaces(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), criTimeout)
	defer cancel()
	st, err := a.rt.Status(ctx, false)
	if err != nil {
		t.Fatalf("runtime status: %v", err)
	}
	for _, h := range st.GetRuntimeHandlers() {
		if h.GetName() == "" && h.GetFeatures().GetUserNamespaces() {
			return
		}
	}
	if os.Getenv("CRIB_REQUIRE_USERNS") != "" {
		t.Fatalf("crib agent's runtime has no user namespaces, and CRIB_REQUIRE_USERNS is set")
	}
	t.Skip("crib agent's runtime does not support user namespaces: hostUsers: false pods cannot run on it")
}
