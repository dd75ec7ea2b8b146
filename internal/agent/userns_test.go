package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/source"
	"github.com/crib-dev/crib/internal/agent/userns"
)

// ownUsers are three pods with hostUsers: false.
const ownUsers = `apiVersion: v1
kind: Pod
metadata: {name: a}
spec:
  hostUsers: false
  containers: [{name: app, image: "busybox:1.36", command: [sleep, "3600"]}]
  volumes: [{name: scratch, emptyDir: {}}]
---
apiVersion: v1
kind: Pod
metadata: {name: b}
spec:
  hostUsers: false
  containers: [{name: app, image: "busybox:1.36", command: [sleep, "3600"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: c}
spec:
  hostUsers: false
  containers: [{name: app, image: "busybox:1.36", command: [sleep, "3600"]}]
`

// usernsRuntime says its default handler supports user namespaces.
type usernsRuntime struct{ internalapi.RuntimeService }

func (usernsRuntime) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{}, RuntimeHandlers: []*runtimeapi.RuntimeHandler{
		{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}},
	}}, nil
}

// servedRange is the block the status API shows for the pod, "" for none.
func servedRange(r *runningAgent, pod *corev1.Pod) string {
	p, ok := r.a.Store().Get(pod.UID)
	if !ok {
		return ""
	}
	return p.Annotations[labels.UserNamespace]
}

func TestAgentUserNamespacesKeptAcrossRestartAndFreed(t *testing.T) {
	f := newRuntimeFakes(t)
	// Two blocks: the third pod only gets one once another is freed.
	node := userns.Range{First: 4 * userns.BlockSize, Length: 2 * userns.BlockSize}
	start := func() *runningAgent {
		return f.startConfigured(t, usernsRuntime{f.rt}, func(c *Config) { c.UserNamespaces = node })
	}
	snap := loadPods(t, ownUsers)
	a, b, c := podNamed(t, snap, "a"), podNamed(t, snap, "b"), podNamed(t, snap, "c")

	first := start()
	first.send(t, only(snap, "a", "b"))
	first.waitRunning(t, f, a)
	first.waitRunning(t, f, b)
	ra, rb := servedRange(first, a), servedRange(first, b)
	if ra == "" || rb == "" || ra == rb {
		t.Fatalf("served ranges a=%q b=%q, want two different blocks", ra, rb)
	}
	for _, want := range []string{"262144+65536", "327680+65536"} {
		if ra != want && rb != want {
			t.Fatalf("served ranges a=%q b=%q, want one of them %s", ra, rb, want)
		}
	}
	if _, err := os.Stat(filepath.Join(f.root, "pods", string(a.UID), userns.FileName)); err != nil {
		t.Fatalf("a's mapping file: %v", err)
	}
	first.stop()

	// Restarted with a and c: a keeps its block and its sandbox, b goes,
	// and c gets the block b freed.
	mark := f.mark()
	second := start()
	second.send(t, only(snap, "a", "c"))
	waitFor(t, "b removed from the runtime", func() bool {
		sbs, cs, _ := f.podObjects(string(b.UID))
		return len(sbs) == 0 && len(cs) == 0
	})
	// c waits for a block until b's teardown frees one, and is synced
	// again after the error requeue.
	waitFor(t, "c running", func() bool {
		f.clk.Step(2 * time.Second)
		_, _, running := f.podObjects(string(c.UID))
		return running == 1
	})
	second.waitRunning(t, f, a)
	second.waitRunning(t, f, c)
	second.idle(t, a, b, c)
	if got := servedRange(second, a); got != ra {
		t.Fatalf("after the restart a shows %q, want its %q", got, ra)
	}
	if got := servedRange(second, c); got != rb {
		t.Fatalf("c shows %q, want b's freed %q", got, rb)
	}
	if n := count(f.callsSince(mark), "RunPodSandbox"); n != 1 {
		t.Fatalf("%d sandboxes made after the restart, want 1 (c's; a keeps its own)", n)
	}
	if _, err := os.Stat(filepath.Join(f.root, "pods", string(b.UID))); !os.IsNotExist(err) {
		t.Fatalf("b's directory is still there: %v", err)
	}
}

func TestAgentUserNamespaceExhaustedWaits(t *testing.T) {
	f := newRuntimeFakes(t)
	node := userns.Range{First: userns.BlockSize, Length: userns.BlockSize}
	r := f.startConfigured(t, usernsRuntime{f.rt}, func(c *Config) { c.UserNamespaces = node })
	snap := loadPods(t, ownUsers)
	a, b := podNamed(t, snap, "a"), podNamed(t, snap, "b")
	r.send(t, only(snap, "a"))
	r.waitRunning(t, f, a)
	r.send(t, only(snap, "a", "b"))
	waitFor(t, "b refused for want of a block", func() bool {
		p, ok := r.a.Store().Get(b.UID)
		if !ok {
			return false
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReadyToStartContainers && c.Status == corev1.ConditionFalse &&
				strings.Contains(c.Message, "no free user namespace range") {
				return true
			}
		}
		return false
	})
	if sbs, _, _ := f.podObjects(string(b.UID)); len(sbs) != 0 {
		t.Fatalf("b got a sandbox %v with no block of ids", sbs)
	}
	if got := servedRange(r, b); got != "" {
		t.Fatalf("b shows %q, want no range", got)
	}
	// a goes, and b gets its block at its next try.
	r.send(t, only(snap, "b"))
	waitFor(t, "b running", func() bool {
		f.clk.Step(2 * time.Second)
		_, _, running := f.podObjects(string(b.UID))
		return running == 1
	})
	r.waitRunning(t, f, b)
	if got := servedRange(r, b); got != "65536+65536" {
		t.Fatalf("b shows %q, want a's freed 65536+65536", got)
	}
}

func TestAgentInvalidUserNamespaceRange(t *testing.T) {
	f := newRuntimeFakes(t)
	a := New(Config{Root: f.root, Runtime: f.rt, Images: f.img, Snapshots: make(chan source.Snapshot),
		UserNamespaces: userns.Range{First: 0, Length: userns.BlockSize}})
	err := a.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "user namespaces") {
		t.Fatalf("Run with a range mapping host root: %v, want an error about user namespaces", err)
	}
}
