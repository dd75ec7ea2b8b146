package agenttest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/crib-dev/crib/internal/agent"
	"github.com/crib-dev/crib/internal/agent/backoff"
	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/agent/statusapi"
	"github.com/crib-dev/crib/internal/testutil"
)

// Timeouts of the suite's waits: deadlines for things to happen, never
// performance assertions.
var (
	pollEvery    = 100 * time.Millisecond
	shortWait    = testutil.Patience(30 * time.Second)
	longWait     = testutil.Patience(60 * time.Second)
	teardownWait = testutil.Patience(90 * time.Second)
)

// crashBackoff is the agent's first restart back-off; it doubles up to
// four times that. Emulated (testutil.Patience), a 1 s back-off can come
// and go between two syncs that publish the status, so it stretches there
// and the scenarios read it back from here.
var crashBackoff = testutil.Patience(time.Second)

// relistEvery is the agent's relist period. A runtime without container
// events (containerd 1.6) has its exits seen only at a relist, and the
// back-off counts from the exit: relisting every second, as the kubelet
// does, a loaded machine saw a 1 s back-off end before the agent saw the
// exit, and so never published it. A quarter of the back-off leaves room.
var relistEvery = crashBackoff / 4

// nodeName is the node the test agents claim to be.
const nodeName = "agent-test-node"

// harness is one agent running in this process over a runtime, with its
// manifest directory, root and pod log root. stop, then start, replaces the
// agent by a new one on the same directories and runtime.
type harness struct {
	t   *testing.T
	env *runtimeEnv
	// Dir is the manifest directory, Root the agent's root (pod volumes in
	// Root/pods), LogRoot the pod log root.
	Dir, Root, LogRoot string
	// CgroupRoot is where the agent makes pod cgroups, under every
	// hierarchy: unique to the harness, removed at cleanup.
	CgroupRoot string
	logFile    *os.File

	mu     sync.Mutex
	agent  *agent.Agent
	cancel context.CancelFunc
	done   chan error
	// uids are every pod UID the harness saw, for the final cleanup.
	uids map[string]bool
}

// startAgent starts an agent on env's runtime with fresh directories. At
// cleanup every manifest is removed, the agent is given time to tear its
// pods down, and it is stopped.
func startAgent(t *testing.T, env *runtimeEnv) *harness {
	t.Helper()
	base := t.TempDir()
	h := &harness{
		t:       t,
		env:     env,
		Dir:     filepath.Join(base, "manifests"),
		Root:    filepath.Join(base, "root"),
		LogRoot: filepath.Join(base, "logs"),
		uids:    map[string]bool{},
		// The agent makes the QoS and pod cgroups as it does for real.
		CgroupRoot: agentCgroupRoot(),
	}
	for _, d := range []string{h.Dir, h.Root, h.LogRoot} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(filepath.Join(base, "agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	h.logFile = f
	t.Cleanup(h.cleanup)
	t.Cleanup(func() { removeCgroupRoot(t, h.CgroupRoot) })
	h.start()
	return h
}

func (h *harness) config() agent.Config {
	return agent.Config{
		ManifestDir: h.Dir,
		NodeName:    nodeName,
		Root:        h.Root,
		PodConfig: podconfig.Options{
			PodLogRoot:    h.LogRoot,
			ClusterDomain: "cluster.local",
			NodeName:      nodeName,
			HostIPs:       []string{"127.0.0.1"},
		},
		CgroupDriver:   testutil.CgroupDriver(),
		CgroupRoot:     h.CgroupRoot,
		Runtime:        h.env.rt,
		Images:         h.env.images,
		RelistInterval: relistEvery,
		ResyncInterval: 2 * time.Second,
		CrashBackoff:   backoff.Config{Initial: crashBackoff, Max: 4 * crashBackoff, ResetAfter: 10 * time.Minute},
		Log:            slog.New(slog.NewTextHandler(h.logFile, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// start runs a new agent in a goroutine.
func (h *harness) start() {
	a := agent.New(h.config())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	h.mu.Lock()
	h.agent, h.cancel, h.done = a, cancel, done
	h.mu.Unlock()
}

// stop cancels the agent and waits for Run to return. Pods keep running.
func (h *harness) stop() {
	h.t.Helper()
	h.mu.Lock()
	cancel, done := h.cancel, h.done
	h.cancel, h.done = nil, nil
	h.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			h.t.Errorf("agent.Run: %v", err)
		}
	case <-time.After(longWait):
		h.t.Errorf("agent.Run did not return within %s of its context's end", longWait)
	}
}

// Agent is the running agent.
func (h *harness) Agent() *agent.Agent {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.agent
}

// Store is the running agent's status store.
func (h *harness) Store() *statusapi.Store { return h.Agent().Store() }

// writeObjects writes objects (Pods, ConfigMaps, Secrets) to file as a
// multi-document YAML manifest, replacing it atomically.
func (h *harness) writeObjects(t testing.TB, file string, objs ...any) {
	t.Helper()
	var b []byte
	for i, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			t.Fatalf("marshal manifest %s: %v", file, err)
		}
		if i > 0 {
			b = append(b, "---\n"...)
		}
		b = append(b, y...)
	}
	h.writeFile(t, file, b)
}

// writePod writes pod to <name>.yaml.
func (h *harness) writePod(t testing.TB, pod *corev1.Pod) {
	t.Helper()
	h.writeObjects(t, pod.Name+".yaml", pod)
}

// writeFile writes a raw manifest, replacing it atomically (rename from a
// hidden file, which the source ignores).
func (h *harness) writeFile(t testing.TB, file string, data []byte) {
	t.Helper()
	tmp := filepath.Join(h.Dir, "."+file+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(h.Dir, file)); err != nil {
		t.Fatal(err)
	}
}

// removeFile deletes a manifest.
func (h *harness) removeFile(t testing.TB, file string) {
	t.Helper()
	if err := os.Remove(filepath.Join(h.Dir, file)); err != nil {
		t.Fatal(err)
	}
}

// removePod deletes the manifest writePod wrote.
func (h *harness) removePod(t testing.TB, name string) {
	t.Helper()
	h.removeFile(t, name+".yaml")
}

// waitFor polls the agent's store every 100 ms until cond holds for the
// pod default/name (nil when the store does not list it), and returns the
// pod cond accepted. It fails the test after timeout, showing the last
// status seen.
func (h *harness) waitFor(t testing.TB, name string, what string, timeout time.Duration, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		p, ok := h.Store().Lookup("default", name)
		if !ok {
			p = nil
		} else {
			h.mu.Lock()
			h.uids[string(p.UID)] = true
			h.mu.Unlock()
		}
		if cond(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s: %s: not within %s; last seen:\n%s", name, what, timeout, describe(p))
		}
		time.Sleep(pollEvery)
	}
}

// cleanup removes every manifest, waits until the runtime holds nothing
// of the pods the harness saw, and stops the agent.
func (h *harness) cleanup() {
	t := h.t
	defer h.logFile.Close()
	if left := h.drain(); len(left) > 0 {
		t.Errorf("cleanup: the agent left, %s after all manifests were removed: %v", teardownWait, left)
	}
	h.stop()
	if t.Failed() {
		if b, err := os.ReadFile(h.logFile.Name()); err == nil {
			const max = 200 << 10
			if len(b) > max {
				b = b[len(b)-max:]
			}
			t.Logf("agent log (tail):\n%s", b)
		}
		keepLog(t, h.logFile.Name())
	}
}

// keepLog copies a failed test's whole agent log into $CRIB_TEST_ARTIFACTS
// when that is set (the VM suite sets it to a directory the host gets
// back), since the test's own log carries only its tail.
func keepLog(t *testing.T, path string) {
	dir := os.Getenv("CRIB_TEST_ARTIFACTS")
	if dir == "" {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Logf("keep agent log: %v", err)
		return
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + "-agent.log"
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Logf("keep agent log: %v", err)
		return
	}
	t.Logf("whole agent log: %s", filepath.Join(dir, name))
}

// drain removes every manifest, starts the agent if it is stopped, and
// waits until the runtime holds nothing of the pods the harness saw. It
// returns what is left after teardownWait.
func (h *harness) drain() []string {
	if a := h.Agent(); a != nil {
		h.mu.Lock()
		for _, p := range a.Store().List().Items {
			h.uids[string(p.UID)] = true
		}
		h.mu.Unlock()
	}
	entries, _ := os.ReadDir(h.Dir)
	for _, e := range entries {
		_ = os.Remove(filepath.Join(h.Dir, e.Name()))
	}
	h.mu.Lock()
	running := h.cancel != nil
	h.mu.Unlock()
	if !running {
		h.start()
	}
	deadline := time.Now().Add(teardownWait)
	for {
		left := h.leftovers()
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// leftovers are the sandboxes and containers the runtime still holds of
// the pods this harness saw.
func (h *harness) leftovers() []string {
	ctx, cancel := context.WithTimeout(context.Background(), criTimeout)
	defer cancel()
	sbs, ctrs, err := h.env.managed(ctx)
	if err != nil {
		return []string{"list: " + err.Error()}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, s := range sbs {
		if uid := s.GetMetadata().GetUid(); h.uids[uid] {
			out = append(out, fmt.Sprintf("sandbox %s of %s", s.Id, s.GetMetadata().GetName()))
		}
	}
	for _, c := range ctrs {
		if uid := c.Labels["io.kubernetes.pod.uid"]; h.uids[uid] {
			out = append(out, fmt.Sprintf("container %s (%s)", c.Id, c.GetMetadata().GetName()))
		}
	}
	return out
}

// describe renders a pod's status for failure messages.
func describe(p *corev1.Pod) string {
	if p == nil {
		return "(not in the store)"
	}
	b, err := yaml.Marshal(p.Status)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// podCgroups lists the pod cgroups left under the harness's cgroup root.
func (h *harness) podCgroups() []string {
	var left []string
	for _, qos := range []string{"", "burstable", "besteffort"} {
		matches, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup/memory", h.CgroupRoot, qos, "pod*"))
		left = append(left, matches...)
	}
	return left
}

// removeCgroupRoot removes the root and QoS cgroups the agent made, in
// every hierarchy, once the pods' own are gone.
// agentCgroupRoot is the harness agent's cgroup root, of this test process
// alone: a directory, or under systemd a slice (whose dashes would nest it).
func agentCgroupRoot() string {
	if testutil.CgroupDriver() == "systemd" {
		return fmt.Sprintf("cribagenttest%d", os.Getpid())
	}
	return fmt.Sprintf("crib-agent-test-%d", os.Getpid())
}

func removeCgroupRoot(t *testing.T, root string) {
	if testutil.CgroupDriver() == "systemd" {
		// The agent made slices: stopping the root stops those below it.
		if err := testutil.StopSystemdUnits(root); err != nil {
			t.Errorf("stop test slices: %v", err)
		}
		if left := testutil.SystemdUnits(root + "*"); len(left) > 0 {
			t.Errorf("systemd units left under the test's cgroup root: %v", left)
		}
		return
	}
	for _, base := range testutil.CgroupDirs(root) {
		for _, dir := range []string{filepath.Join(base, "burstable"), filepath.Join(base, "besteffort"), base} {
			// A pod's last processes may still be on their way out of the
			// cgroup (busy) for a moment after the agent removed the pod.
			var err error
			for deadline := time.Now().Add(testutil.Patience(5 * time.Second)); ; time.Sleep(50 * time.Millisecond) {
				err = os.Remove(dir)
				if err == nil || os.IsNotExist(err) || !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
					break
				}
			}
			if err != nil && !os.IsNotExist(err) {
				t.Errorf("remove test cgroup %s: %v", dir, err)
			}
		}
	}
}
