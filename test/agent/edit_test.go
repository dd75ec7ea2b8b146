package agenttest

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
)

// testEditContainer: a changed command replaces the container, and the
// runtime never runs two instances of it meanwhile.
func testEditContainer(t *testing.T, s *suite) {
	const name = "edit-command"
	loop := func(v string) string {
		return "trap 'exit 0' TERM; while true; do echo " + v + "; sleep 1; done"
	}
	pod := podSpec(name, s.env.shell("app", loop("v1")))
	s.h.writePod(t, pod)
	p := s.h.waitFor(t, name, "v1 running", longWait, func(p *corev1.Pod) bool { return running(p, "app") })
	oldID := containerStatus(p, "app").ContainerID
	uid := string(p.UID)

	// Watch the runtime through the transition.
	watch := watchRunning(s.env, uid, "app")
	pod.Spec.Containers[0].Command = []string{"sh", "-c", loop("v2")}
	s.h.writePod(t, pod)
	s.h.waitFor(t, name, "replaced and running", longWait, func(p *corev1.Pod) bool {
		st := containerStatus(p, "app")
		return st != nil && st.State.Running != nil && st.ContainerID != oldID
	})
	// Edits in quick succession: the newest wins, never two at once.
	for _, v := range []string{"v3", "v4", "v5"} {
		pod.Spec.Containers[0].Command = []string{"sh", "-c", loop(v)}
		s.h.writePod(t, pod)
		time.Sleep(30 * time.Millisecond)
	}
	// The pod ends up on the newest edit: its running container (by the
	// status, whose restart count names the log file) says only v5. The
	// status, not the log directory, says which container that is: a
	// container that is already logging may not be in the status yet.
	s.h.waitFor(t, name, "running v5 only", longWait, func(p *corev1.Pod) bool {
		st := containerStatus(p, "app")
		if st == nil || st.State.Running == nil {
			return false
		}
		lines, err := readCRILog(filepath.Join(podLogDir(s.h.LogRoot, p), "app", fmt.Sprintf("%d.log", st.RestartCount)))
		return err == nil && contains(lines, "v5") && len(lines) == countOf(lines, "v5")
	})
	// A few more relists with the new container.
	time.Sleep(2 * time.Second)
	maxRunning, errs := watch()
	for _, err := range errs {
		t.Errorf("watch runtime: %v", err)
	}
	if maxRunning > 1 {
		t.Errorf("the runtime ran %d instances of app at once during the edit", maxRunning)
	}
	p = s.h.waitFor(t, name, "running", shortWait, func(p *corev1.Pod) bool { return running(p, "app") })
	if ctrs := s.env.containers(t, uid, ptr(runtimeapi.ContainerState_CONTAINER_RUNNING)); len(ctrs) != 1 || ctrs[0].Id != trimScheme(p.Status.ContainerStatuses[0].ContainerID) {
		t.Errorf("running containers %v, want only %s", ctrIDs(ctrs), p.Status.ContainerStatuses[0].ContainerID)
	}
}

// testEditSandbox: a hostname change is pod-level: a new sandbox replaces
// the old one, which is removed.
func testEditSandbox(t *testing.T, s *suite) {
	const name = "edit-hostname"
	pod := podSpec(name, s.env.shell("app", "hostname; "+sleepForever))
	pod.Spec.Hostname = "first"
	s.h.writePod(t, pod)
	p := s.h.waitFor(t, name, "running", longWait, func(p *corev1.Pod) bool { return running(p, "app") })
	uid := string(p.UID)
	old := readySandboxes(s.env.sandboxes(t, uid))
	if len(old) != 1 {
		t.Fatalf("ready sandboxes %v, want one", old)
	}

	pod.Spec.Hostname = "second"
	s.h.writePod(t, pod)
	var fresh string
	s.h.waitFor(t, name, "running in a new sandbox", longWait, func(p *corev1.Pod) bool {
		if !running(p, "app") {
			return false
		}
		ids := readySandboxes(s.env.sandboxes(t, uid))
		if len(ids) == 1 && ids[0] != old[0] {
			fresh = ids[0]
			return true
		}
		return false
	})
	deadline := time.Now().Add(shortWait)
	for {
		var ids []string
		for _, sb := range s.env.sandboxes(t, uid) {
			ids = append(ids, sb.Id)
		}
		if len(ids) == 1 && ids[0] == fresh {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandboxes %v, want only the new %s", ids, fresh)
		}
		time.Sleep(pollEvery)
	}
	p = s.h.waitFor(t, name, "running", shortWait, func(p *corev1.Pod) bool { return running(p, "app") })
	logs := containerLogs(s.h.LogRoot, p, "app")
	if len(logs) == 0 {
		t.Fatalf("no logs of app")
	}
	waitLog(t, logs[len(logs)-1], "prints the new hostname", func(l []string) bool { return contains(l, "second") })
}

func readySandboxes(items []*runtimeapi.PodSandbox) []string {
	var out []string
	for _, sb := range items {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			out = append(out, sb.Id)
		}
	}
	return out
}

// watchRunning polls the runtime every 50 ms for running containers named
// name of the pod uid until the returned function is called; that returns
// the largest number seen at once and the errors of the polls.
func watchRunning(env *runtimeEnv, uid, name string) func() (int, []error) {
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu   sync.Mutex
		max  int
		errs []error
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			items, err := env.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{
				State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
				LabelSelector: map[string]string{labels.PodUID: uid},
			})
			mu.Lock()
			if err != nil && ctx.Err() == nil && len(errs) < 5 {
				errs = append(errs, err)
			}
			n := 0
			for _, c := range items {
				if c.GetMetadata().GetName() == name {
					n++
				}
			}
			if n > max {
				max = n
			}
			mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() (int, []error) {
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return max, errs
	}
}

func ptr[T any](v T) *T { return &v }

func ctrIDs(items []*runtimeapi.Container) []string {
	out := make([]string, 0, len(items))
	for _, c := range items {
		out = append(out, c.Id)
	}
	return out
}

// trimScheme drops the "<runtime>://" of a status container ID.
func trimScheme(id string) string {
	for i := 0; i+2 < len(id); i++ {
		if id[i:i+3] == "://" {
			return id[i+3:]
		}
	}
	return id
}

func countOf(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if l == s {
			n++
		}
	}
	return n
}
